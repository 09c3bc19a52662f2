# corpus-shape: the logging module configured once with a file and a console handler
#   (basicConfig(handlers=[FileHandler, StreamHandler])), a module logger, info per epoch and a
#   warning when the loss rises.
# corpus-metric: epoch=\d+ loss=([\d.]+)
# corpus-tolerance: 0.5 0.05
import logging
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    handlers=[logging.FileHandler("train.log"), logging.StreamHandler(sys.stdout)])
log = logging.getLogger("trainer")

torch.manual_seed(5)
data = torch.randn(120, 4)
target = data[:, :1] - 2 * data[:, 1:2]
loader = DataLoader(TensorDataset(data, target), batch_size=12, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.Adagrad(model.parameters(), lr=0.3)
previous = float("inf")
for epoch in range(4):
    seen, total = 0, 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
        seen += len(xb)
    mean = total / seen
    log.info("epoch=%d loss=%.4f", epoch, mean)
    if mean > previous:
        log.warning("loss rose from %.4f to %.4f", previous, mean)
    previous = mean
