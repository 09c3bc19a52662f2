# corpus-shape: an encoder and a decoder, each a module of its own with an optimizer of its own
#   (different rates), one loss and one backward, both optimizers stepped; both zeroed by a loop
#   over a list of the optimizers.
# corpus-metric: epoch \d+ reconstruction ([\d.]+)
# corpus-tolerance: 0.5 0.02
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(21)
base = torch.randn(240, 3)
signals = torch.cat([base, base @ torch.randn(3, 9)], 1)
loader = DataLoader(TensorDataset(signals), batch_size=24, shuffle=True)
encoder = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
decoder = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 12))
enc_opt = torch.optim.Adam(encoder.parameters(), lr=3e-3)
dec_opt = torch.optim.Adam(decoder.parameters(), lr=1e-2)
optimizers = [enc_opt, dec_opt]
for epoch in range(5):
    total = 0.0
    for (batch,) in loader:
        for o in optimizers:
            o.zero_grad()
        loss = nn.functional.mse_loss(decoder(encoder(batch)), batch)
        loss.backward()
        enc_opt.step()
        dec_opt.step()
        total += loss.item()
    print(f"epoch {epoch} reconstruction {total / len(loader):.4f}")
