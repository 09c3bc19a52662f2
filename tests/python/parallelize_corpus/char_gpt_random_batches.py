# corpus-shape: a character-level language model in the shape of the "let's build GPT" lectures
#   (and nanoGPT without its DDP code): no DataLoader, every batch drawn at random by
#   get_batch(split) with torch.randint, losses estimated under @torch.no_grad(), text sampled at
#   the end. From one seed every rank would draw the same batches: they must draw their own.
# corpus-says: batches drawn at random
# corpus-metric: step \d+: train loss ([\d.]+)
# corpus-metric: step \d+: train loss [\d.]+, val loss ([\d.]+)
# corpus-tolerance: 0.1 0.05
import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size = 16
block_size = 16
max_iters = 240
eval_interval = 60
learning_rate = 3e-3
eval_iters = 20
n_embd = 32
device = "cuda" if torch.cuda.is_available() else "cpu"

torch.manual_seed(1337)
words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "it"]
text = " ".join(words[(i * 7 + i // 3) % len(words)] for i in range(3000))
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}


def encode(s):
    return [stoi[c] for c in s]


def decode(ids):
    return "".join(itos[i] for i in ids)


data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9 * len(data))
train_data = data[:n]
val_data = data[n:]


def get_batch(split):
    source = train_data if split == "train" else val_data
    ix = torch.randint(len(source) - block_size, (batch_size,))
    x = torch.stack([source[i:i + block_size] for i in ix])
    y = torch.stack([source[i + 1:i + block_size + 1] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


class TinyLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.mix = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd))
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx)
        pos_emb = self.position_embedding_table(torch.arange(T, device=idx.device))
        x = tok_emb + pos_emb
        # Each position sees the mean of the positions up to it (a causal average, not attention).
        weights = torch.tril(torch.ones(T, T, device=idx.device))
        x = x + (weights / weights.sum(1, keepdim=True)) @ x
        logits = self.lm_head(x + self.mix(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))

    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -block_size:])
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


model = TinyLanguageModel()
m = model.to(device)
print(sum(p.numel() for p in m.parameters()) / 1e3, "K parameters")
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

for iter in range(max_iters):
    if iter % eval_interval == 0 or iter == max_iters - 1:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    xb, yb = get_batch("train")
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

context = torch.zeros((1, 1), dtype=torch.long, device=device)
print(decode(m.generate(context, max_new_tokens=60)[0].tolist()))
