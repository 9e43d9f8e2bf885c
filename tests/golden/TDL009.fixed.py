import torch
import torch.nn.functional as F
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int, p: float = 0.2) -> None:
        super().__init__()
        self.hidden = nn.Linear(features, 4 * features)
        self.output = nn.Linear(4 * features, classes)
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, self.p, training=self.training)
        h = torch.relu(self.hidden(x))
        h = F.dropout(h, p=self.p, inplace=True, training=self.training)
        attention_weights = torch.softmax(h, dim=-1)
        attention_weights = F.dropout(
            attention_weights,
            p=self.attention_dropout_p,
            training=self.training,
        )
        return self.output(h * attention_weights)

    @property
    def attention_dropout_p(self) -> float:
        return self.p / 2


model = Classifier(16, 3)
model.eval()
with torch.no_grad():
    logits = model(torch.ones(2, 16))
