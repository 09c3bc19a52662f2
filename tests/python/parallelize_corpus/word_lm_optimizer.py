# corpus-shape: word_language_model with a torch.optim optimizer: batchify/get_batch over a token
#   stream in chunks of bptt (`for batch, i in enumerate(range(0, N - 1, bptt))`), clipping,
#   an evaluate() under no_grad summing len(data) * loss, the rate annealed by hand when the
#   validation loss stops improving, the best model saved with `with open(..., 'wb')`.
# corpus-says: batches split between the ranks
# corpus-metric: valid ppl +([\d.]+)
# corpus-tolerance: 0.35 0.5
import math

import torch
import torch.nn as nn

torch.manual_seed(1111)
ntokens, bptt, eval_batch_size = 30, 8, 10
noise = torch.randint(0, 3, (6000,), generator=torch.Generator().manual_seed(5))
stream = (torch.arange(6000) * 7 + noise) % ntokens
corpus_train, corpus_valid = stream[:5000], stream[5000:]


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(ntokens, 16)
        self.rnn = nn.GRU(16, 32)
        self.decoder = nn.Linear(32, ntokens)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out).view(-1, ntokens), hidden


train_data = batchify(corpus_train, 10)
val_data = batchify(corpus_valid, eval_batch_size)
model = RNNModel()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = torch.zeros(1, eval_batch_size, 32)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


best_val_loss = None
for epoch in range(1, 4):
    model.train()
    hidden = torch.zeros(1, 10, 32)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        hidden = hidden.detach()
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
    val_loss = evaluate(val_data)
    print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}")
    if not best_val_loss or val_loss < best_val_loss:
        with open("model.pt", "wb") as f:
            torch.save(model.state_dict(), f)
        best_val_loss = val_loss
    else:
        for group in optimizer.param_groups:
            group["lr"] /= 4.0
