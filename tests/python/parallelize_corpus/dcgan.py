# corpus-shape: pytorch/examples dcgan: a generator and a discriminator with an optimizer each
#   (Adam, betas), the discriminator trained on real then fake (two backward passes), the
#   generator through the discriminator, per-iteration log lines, both models' state_dicts saved
#   every epoch into an output folder made with os.makedirs.
# corpus-metric: \[\d+/\d+\]\[0/\d+\] Loss_D: ([\d.]+)
# corpus-tolerance: 0.6 0.3
import argparse
import os
import random

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--batchSize", type=int, default=16)
parser.add_argument("--nz", type=int, default=8)
parser.add_argument("--niter", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--beta1", type=float, default=0.5)
parser.add_argument("--outf", default="out")
parser.add_argument("--manualSeed", type=int, default=999)
opt = parser.parse_args()
os.makedirs(opt.outf, exist_ok=True)
random.seed(opt.manualSeed)
torch.manual_seed(opt.manualSeed)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

data = torch.tanh(torch.randn(256, 1, 8, 8, generator=torch.Generator().manual_seed(3)) + 0.5)
dataset = TensorDataset(data)
dataloader = DataLoader(dataset, batch_size=opt.batchSize, shuffle=True)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.ConvTranspose2d(opt.nz, 16, 4, 1, 0, bias=False), nn.ReLU(True),
                                  nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                                  nn.Conv2d(16, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


netG = Generator().to(device)
netG.apply(weights_init)
netD = Discriminator().to(device)
netD.apply(weights_init)
criterion = nn.BCELoss()
fixed_noise = torch.randn(opt.batchSize, opt.nz, 1, 1, device=device)
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

for epoch in range(opt.niter):
    for i, batch in enumerate(dataloader, 0):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = batch[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = torch.randn(batch_size, opt.nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        print("[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f"
              % (epoch, opt.niter, i, len(dataloader), errD.item(), errG.item(), D_x))
    torch.save(netG.state_dict(), "%s/netG_epoch_%d.pth" % (opt.outf, epoch))
    torch.save(netD.state_dict(), "%s/netD_epoch_%d.pth" % (opt.outf, epoch))
