"""torch.distributed.checkpoint on tidal: sharded save and load of state dicts holding DTensors
(each rank writes its shards, load reshards to the current layout), and the model/optimizer
state-dict helpers (`torch.distributed.checkpoint.state_dict`)."""
from __future__ import annotations

from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter, StorageReader, StorageWriter
from .state_dict_loader import load, load_state_dict
from .state_dict_saver import Metadata, async_save, save, save_state_dict
from .stateful import Stateful

__all__ = ["save", "async_save", "load", "FileSystemWriter", "FileSystemReader", "StorageWriter", "StorageReader",
           "Metadata", "Stateful", "DefaultSavePlanner", "DefaultLoadPlanner", "save_state_dict", "load_state_dict"]
