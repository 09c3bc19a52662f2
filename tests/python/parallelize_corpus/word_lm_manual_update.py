# corpus-shape: pytorch/examples word_language_model as it is: batchify/get_batch over a token
#   stream, an LSTM, the hidden state carried across chunks, and the parameters updated by hand
#   (p.data.add_(p.grad, alpha=-lr)) instead of by a torch.optim optimizer: refused, saying what to
#   do (there is no optimizer to wrap).
# corpus-refused: no torch.optim optimizer is constructed
import math

import torch
import torch.nn as nn

torch.manual_seed(1111)
ntokens, bptt, lr, clip = 50, 8, 5.0, 0.25
corpus = torch.arange(4000) * 7 % ntokens


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
model = RNNModel()
criterion = nn.CrossEntropyLoss()
for epoch in range(1, 3):
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
    print(f"| epoch {epoch} | ppl {math.exp(total / (batch + 1)):8.2f}")
