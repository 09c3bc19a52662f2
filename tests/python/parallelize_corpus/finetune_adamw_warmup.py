# corpus-shape: a fine-tuning loop as Hugging Face's scripts write it: AdamW over parameter groups
#   (no weight decay on biases and norms, the model found through named_parameters()), a linear
#   warmup-then-decay LambdaLR stepped per optimizer step, gradient accumulation, clipping, AMP
#   (bfloat16 autocast on the CPU, float16 with a GradScaler on CUDA), an evaluation with
#   accuracy, a logger, the model saved at the end.
# corpus-args: --epochs 3 --accum 2
# corpus-metric: eval accuracy ([\d.]+)
# corpus-tolerance: 0.15 0
# corpus-says: line 58: learning rate scaled
import argparse
import logging

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)
logging.basicConfig(format="%(levelname)s - %(message)s", level=logging.INFO)


class PairDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x[:, :8].sum(1) > self.x[:, 8:].sum(1)).long()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"inputs": self.x[i], "labels": self.y[i]}


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU())
        self.head = nn.Linear(32, 2)

    def forward(self, inputs):
        return self.head(self.encoder(inputs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--accum", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(42)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Classifier().to(device)
    no_decay = ["bias", "LayerNorm.weight"]
    grouped = [{"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
                "weight_decay": 0.01},
               {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
                "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(grouped, lr=args.lr)
    train_dataloader = DataLoader(PairDataset(512, 1), batch_size=16, shuffle=True)
    eval_dataloader = DataLoader(PairDataset(128, 2), batch_size=32)
    total_steps = len(train_dataloader) // args.accum * args.epochs
    warmup = max(1, total_steps // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: step / warmup if step < warmup else max(0.0, (total_steps - step) / (total_steps - warmup)))
    use_cuda = device.type == "cuda"
    scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)
    amp_dtype = torch.float16 if use_cuda else torch.bfloat16
    logger.info("***** Running training: %d examples, %d steps *****", len(train_dataloader.dataset), total_steps)
    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            batch = {k: v.to(device) for k, v in batch.items()}
            with torch.autocast(device_type=device.type, dtype=amp_dtype):
                logits = model(batch["inputs"])
                loss = nn.functional.cross_entropy(logits.float(), batch["labels"]) / args.accum
            scaler.scale(loss).backward()
            if (step + 1) % args.accum == 0 or step == len(train_dataloader) - 1:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad()
        model.eval()
        correct = 0
        for batch in eval_dataloader:
            with torch.no_grad():
                logits = model(batch["inputs"].to(device))
            correct += (logits.argmax(-1) == batch["labels"].to(device)).sum().item()
        logger.info("epoch %d: eval accuracy %.4f", epoch, correct / len(eval_dataloader.dataset))
    torch.save(model.state_dict(), "pytorch_model.bin")


if __name__ == "__main__":
    main()
