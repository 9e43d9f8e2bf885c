import torch


def main():
    torch.use_deterministic_algorithms(True)
    a = torch.randn(4, 4, device="cuda")
    return a @ a


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
