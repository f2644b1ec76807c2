"""An accelerate run of 2 CPU processes on our DataLoader (run by test_frameworks
under `accelerate launch --multi_gpu --num_processes 2`, which runs gloo on CPU
where there is no GPU).

Usage: accelerate_job.py OUT_DIR. Each rank writes OUT_DIR/rank<N>.json with the
indices it saw per epoch and where its items were loaded.
"""

import json
import os
import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from indexed import Indexed  # beside this script

from dataloader_api import DataLoader


def main() -> None:
    out = Path(sys.argv[1])
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Indexed(), batch_size=4, shuffle=True, num_workers=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    seen, loaded_on = {}, set()
    for epoch in range(2):  # no set_epoch: accelerate users do not call it
        for batch in loader:
            seen.setdefault(epoch, []).extend(batch["index"].tolist())
            loaded_on.update(batch["loaded_on"])
            loss = model(batch["x"]).sum()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    report = {
        "rank": accelerator.process_index,
        "world": accelerator.num_processes,
        "seen": seen,
        "loaded_on": sorted(loaded_on),
        "loader_types": [f"{type(loader).__module__}.{type(loader).__name__}"],
    }
    (out / f"rank{accelerator.process_index}.json").write_text(json.dumps(report))
    accelerator.end_training()
    # The result is written. Skip finalization: now and then a gloo worker thread
    # (pt_gloo_runloop) frees a finished allreduce that holds a Python
    # contextvars.Context while the interpreter finalizes, and the process aborts
    # (core dumps show none of our threads alive; a DDP + gloo script with no
    # DataLoader aborts the same way, and torch's own loader in this job as often).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
