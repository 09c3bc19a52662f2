# corpus-shape: a script for PyTorch 2: the device chosen once (CUDA where there is one), the
#   model compiled with torch.compile where torch has it, pin_memory and worker processes in the
#   DataLoader, non_blocking copies, set_to_none zeroing, a final evaluation with inference_mode.
# corpus-metric: final accuracy ([\d.]+)
# corpus-tolerance: 0.1 0
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(4)
    x = torch.randn(320, 12, generator=g)
    y = x[:, :3].argmax(1)
    train_loader = DataLoader(TensorDataset(x[:256], y[:256]), batch_size=32, shuffle=True, num_workers=2,
                              pin_memory=torch.cuda.is_available(), persistent_workers=True)
    test_x, test_y = x[256:].to(device), y[256:].to(device)
    model = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 3)).to(device)
    if hasattr(torch, "compile"):
        model = torch.compile(model)
    optimizer = torch.optim.NAdam(model.parameters(), lr=1e-2)
    for epoch in range(6):
        model.train()
        for xb, yb in train_loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.inference_mode():
        acc = (model(test_x).argmax(1) == test_y).float().mean().item()
    print(f"final accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
