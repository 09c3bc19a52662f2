# Fits y = 3x - 1 plus noise by slicing tensors into batches by hand: constants, no main guard,
# no DataLoader. One process; `hoop-parallelize` makes it distributed (see README.md here).
import torch

EPOCHS = 8
BATCH = 64
LR = 0.02

torch.manual_seed(0)
X = torch.randn(4096, 1)
Y = 3 * X - 1 + 0.1 * torch.randn(4096, 1)
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=LR)

first = None
for epoch in range(EPOCHS):
    total, batches = 0.0, 0
    for i in range(0, len(X), BATCH):
        xb, yb = X[i:i + BATCH], Y[i:i + BATCH]
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    first = total / batches if first is None else first
    print(f"epoch {epoch}: loss {total / batches:.4f}")

with torch.no_grad():
    final = torch.nn.functional.mse_loss(model(X), Y).item()
print(f"final loss {final:.4f} (first epoch {first:.4f})")
