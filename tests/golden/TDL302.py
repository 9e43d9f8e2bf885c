import torch
import torch.nn.functional as F


def main():
    x = torch.randn(1, 3, 8, 8, device="cuda", requires_grad=True)
    loss = F.interpolate(x, scale_factor=2, mode="bilinear").mean()
    loss.backward()
    return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
