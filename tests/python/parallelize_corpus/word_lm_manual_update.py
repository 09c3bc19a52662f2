# corpus-shape: pytorch/examples word_language_model as it is: batchify/get_batch over a token
#   stream, an LSTM, the hidden state carried across chunks, and the parameters updated by hand
#   (p.data.add_(p.grad, alpha=-lr)) in a train() function instead of by a torch.optim optimizer,
#   an evaluate() under no_grad, the rate annealed by hand (lr /= 4.0) when the validation loss
#   stops improving, the best model saved. No optimizer to wrap: the model is (DDP), or its
#   gradients averaged after backward and before the clipping (Horovod style); the rate in the
#   update scaled by the number of ranks.
# corpus-says: the rate of the update by hand of 'model' scaled by the number of ranks
# corpus-says-horovod: the gradients of 'model' averaged over the ranks before its update by hand
# corpus-says-ddp: model 'model' wrapped in DistributedDataParallel
# corpus-metric: train ppl +([\d.]+)
# corpus-metric: valid ppl +([\d.]+)
import math

import torch
import torch.nn as nn

torch.manual_seed(1111)
ntokens, bptt, lr, clip = 50, 8, 5.0, 0.25
corpus = torch.arange(4000) * 7 % ntokens
valid = torch.arange(600) * 7 % ntokens


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
        self.rnn = nn.LSTM(16, 16)
        self.decoder = nn.Linear(16, ntokens)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out).view(-1, ntokens), hidden


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


train_data = batchify(corpus, 10)
val_data = batchify(valid, 5)
model = RNNModel()
criterion = nn.CrossEntropyLoss()


def train():
    model.train()
    hidden = (torch.zeros(1, 10, 16), torch.zeros(1, 10, 16))
    total = 0.0
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total += loss.item()
    return total / (batch + 1)


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = (torch.zeros(1, 5, 16), torch.zeros(1, 5, 16))
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


best_val_loss = None
for epoch in range(1, 4):
    train_loss = train()
    val_loss = evaluate(val_data)
    print(f"| epoch {epoch} | train ppl {math.exp(train_loss):8.2f} | valid ppl {math.exp(val_loss):8.2f}")
    if not best_val_loss or val_loss < best_val_loss:
        with open("model.pt", "wb") as f:
            torch.save(model.state_dict(), f)
        best_val_loss = val_loss
    else:
        lr /= 4.0
