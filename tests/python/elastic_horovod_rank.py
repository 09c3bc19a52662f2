"""A Horovod elastic training script, its import changed to hoop.torch (test_horovod.py), under
elastic hooprun (-np 3 --min-np 2 --max-np 3): TorchState with the model, the optimizer, an
ElasticSampler and the epoch and batch; commits every 2 batches; a reset callback scales the
learning rate by hvd.size(). Job rank 1 (HOOP_RANK, not a newcomer) kills itself (SIGKILL) in
epoch 1, after batch 3; its replacement, started by hooprun, joins at a commit. Prints
"rank R of N (job rank J, newcomer B): epochs E, steps S, lr L, loss A -> B, weights W"."""
import os
import signal
import time

import torch
import hoop.torch as hvd   # was: import horovod.torch as hvd

hvd.init()
torch.manual_seed(0)
x = torch.randn(384, 10)
y = x @ torch.linspace(-1, 1, 10).unsqueeze(1)
data = torch.utils.data.TensorDataset(x, y)
torch.manual_seed(hvd.rank())   # different on every rank: the state's sync must fix it
model = torch.nn.Linear(10, 1)
base_lr, batch_size, epochs = 0.05, 16, 8
optimizer = torch.optim.SGD(model.parameters(), lr=base_lr * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=7)
loader = torch.utils.data.DataLoader(data, batch_size=batch_size, sampler=sampler)
job_rank = int(os.environ["HOOP_RANK"])
newcomer = os.environ.get("HOOP_JOIN") == "1"
first_loss = []


def on_reset():
    for group in optimizer.param_groups:
        group["lr"] = base_lr * hvd.size()


@hvd.elastic.run
def train(state):
    for state.epoch in range(state.epoch, epochs):
        for state.batch, (xb, yb) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            first_loss.append(loss.item())
            state.steps += 1
            sampler.record_batch(state.batch, batch_size)
            time.sleep(0.08)  # a step's worth of time: the replacement comes while training goes on
            if state.epoch == 1 and state.batch == 3 and job_rank == 1 and not newcomer:
                os.kill(os.getpid(), signal.SIGKILL)
            if state.batch % 2 == 1:
                state.commit()
        state.batch = 0
        sampler.set_epoch(state.epoch + 1)
        state.commit()
    return torch.nn.functional.mse_loss(model(x), y).item()


state = hvd.elastic.TorchState(model, optimizer, train_sampler=sampler, epoch=0, batch=0, steps=0)
state.register_reset_callbacks([on_reset])
final = train(state)
weights = torch.cat([p.detach().flatten() for p in model.parameters()])
same = hvd.allgather(weights.unsqueeze(0))
assert bool((same == same[0]).all()), "the ranks' weights differ"
print(f"rank {hvd.rank()} of {hvd.size()} (job rank {job_rank}, newcomer {int(newcomer)}): epochs {state.epoch + 1}, "
      f"steps {state.steps}, lr {optimizer.param_groups[0]['lr']:.2f}, "
      f"loss {first_loss[0] if first_loss else float('nan'):.4f} -> {final:.6f}, weights {weights.abs().sum().item():.6f}",
      flush=True)
hvd.shutdown()
