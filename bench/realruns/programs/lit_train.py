"""The same kind of small job under Lightning (Trainer on CPU, DDP over gloo for devices > 1).

--fault: none, shape (one rank's batch gains a feature column), nan (a nan sample on one rank;
EarlyStopping's finiteness check stops the run), anomaly (Trainer(detect_anomaly=True) with a
sqrt at zero), embedding (a token id past the vocabulary on one rank).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Module(L.LightningModule):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.embed = nn.Embedding(args.vocab, args.hidden)
        self.inp = nn.Linear(args.features, args.hidden)
        self.head = nn.Linear(args.hidden, 4)

    def training_step(self, batch: tuple, batch_idx: int) -> torch.Tensor:
        x, tokens, y = batch
        a = self.args
        hit = (a.fail_rank < 0 or self.global_rank == a.fail_rank) and batch_idx == a.fail_step
        if hit and a.fault == "shape":
            x = torch.cat([x, x[:, :1]], dim=1)
        if hit and a.fault == "nan":
            x = x.clone()
            x[0, 0] = float("nan")
        if hit and a.fault == "embedding":
            tokens = tokens.clone()
            tokens[0, 0] = a.vocab + 3
        h = self.inp(x) + self.embed(tokens).mean(1)
        loss = F.cross_entropy(self.head(torch.tanh(h)), y)
        if hit and a.fault == "anomaly":
            loss = loss + (h - h.detach()).pow(2).sum(-1).sqrt().mean()
        self.log("train_loss", loss, prog_bar=True, sync_dist=a.fault == "nan")
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fail-rank", type=int, default=0)
    p.add_argument("--fail-step", type=int, default=4)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--strategy", default="ddp")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--vocab", type=int, default=40)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args(shlex.split(os.environ.get("REALRUNS_ARGS", "")) + sys.argv[1:])
    L.seed_everything(args.seed)
    n = 8 * args.steps * args.devices
    data = TensorDataset(
        torch.randn(n, args.features),
        torch.randint(0, args.vocab, (n, 5)),
        torch.randint(0, 4, (n,)),
    )
    callbacks = []
    if args.fault == "nan":
        callbacks.append(
            EarlyStopping(
                monitor="train_loss",
                check_finite=True,
                patience=100,
                check_on_train_epoch_end=True,
                verbose=True,
            )
        )
    trainer = L.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy=args.strategy if args.devices > 1 else "auto",
        max_epochs=3 if args.fault == "nan" else 1,
        log_every_n_steps=1,
        enable_checkpointing=False,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=args.seed % 2 == 0,
        detect_anomaly=args.fault == "anomaly",
        callbacks=callbacks,
    )
    trainer.fit(Module(args), DataLoader(data, batch_size=8))
    print(
        f"rank {trainer.global_rank}: training finished after {trainer.global_step} steps",
        flush=True,
    )


if __name__ == "__main__":
    main()
