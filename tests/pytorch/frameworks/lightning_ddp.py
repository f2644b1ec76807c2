"""A Lightning DDP run of 2 CPU processes on our DataLoader (run by test_frameworks).

Usage: python lightning_ddp.py OUT_DIR. Lightning starts rank 1 itself by running
this script again; each rank writes OUT_DIR/rank<N>.json with the indices its
training steps saw per epoch and where its items were loaded.
"""

import json
import sys
from pathlib import Path

import lightning as L
import torch
from indexed import Indexed  # beside this script

from dataloader_api import DataLoader


class Recorder(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.seen = {}
        self.loaded_on = set()
        self.loader_types = set()

    def training_step(self, batch, batch_index):
        self.seen.setdefault(self.current_epoch, []).extend(batch["index"].tolist())
        self.loaded_on.update(batch["loaded_on"])
        loader = self.trainer.train_dataloader
        self.loader_types.add(f"{type(loader).__module__}.{type(loader).__name__}")
        return self.layer(batch["x"]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return DataLoader(Indexed(), batch_size=4, shuffle=True, num_workers=2)


def main() -> None:
    out = Path(sys.argv[1])
    model = Recorder()
    trainer = L.Trainer(
        accelerator="cpu",
        strategy="ddp",
        devices=2,
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model)
    report = {
        "rank": trainer.global_rank,
        "world": trainer.world_size,
        "seen": model.seen,
        "loaded_on": sorted(model.loaded_on),
        "loader_types": sorted(model.loader_types),
    }
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
