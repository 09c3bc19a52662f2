# corpus-shape: after each epoch the training set is evaluated again under
#   torch.inference_mode(): a loss averaged per batch (/ len(train_loader), this rank's batches)
#   and a count of correct answers over NUM_TRAIN, the whole set's size written as a number. Over
#   the split loader the first is averaged over the ranks, the second summed.
# corpus-says: correct summed over the ranks
# corpus-says: eval_loss averaged over the ranks
# corpus-metric: epoch \d+ eval loss ([\d.]+)
# corpus-metric: epoch \d+ .*accuracy ([\d.]+)
# corpus-tolerance: 0.15 0.02
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

NUM_TRAIN = 480
torch.manual_seed(21)
inputs = torch.randn(NUM_TRAIN, 6)
labels = (inputs[:, 2] - inputs[:, 5] + 0.3 * torch.randn(NUM_TRAIN) > 0).long()
train_loader = DataLoader(TensorDataset(inputs, labels), batch_size=24, shuffle=True)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 2))
optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(4):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss_fn(model(xb), yb).backward()
        optimizer.step()
    model.eval()
    eval_loss, correct = 0.0, 0
    with torch.inference_mode():
        for xb, yb in train_loader:
            out = model(xb)
            eval_loss += loss_fn(out, yb).item()
            correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch} eval loss {eval_loss / len(train_loader):.4f}, {correct} right, "
          f"accuracy {correct / NUM_TRAIN:.4f}")
