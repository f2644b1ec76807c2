"""The dataset both framework runs load: each item says its index and whether
it was loaded on one of our worker threads."""

import threading

import torch

from dataloader_api import get_worker_info

ITEMS = 64


class Indexed(torch.utils.data.Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, index):
        info = get_worker_info()
        loaded_on = "worker-thread" if info is not None else threading.current_thread().name
        return {"index": index, "x": torch.full((2,), float(index)), "loaded_on": loaded_on}
