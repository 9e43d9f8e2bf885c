"""Distributed helpers in the style of deit/mae/dino: rank 0 saves."""

import torch


def is_main_process():
    return not torch.distributed.is_available() or not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0


def save_on_master(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)
