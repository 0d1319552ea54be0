"""torch.distributed._composable.fsdp, FSDP2's import path before torch.distributed.fsdp (torch 2.4-2.5 scripts):
under tidal.compat it holds the very objects of torch.distributed.fsdp, as in torch 2.13."""
import torch.distributed._composable.fsdp as theirs
import torch.distributed.fsdp as theirs_new



def test_old_fsdp2_path_names_the_same_objects_as_torch():
    import tidal.compat  # noqa: F401
    from tidal.compat._importer import target_name
    assert target_name("torch.distributed._composable.fsdp") == "tidal.distributed._composable.fsdp"
    import tidal.distributed._composable.fsdp as ours
    import tidal.distributed.fsdp as ours_new
    names = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard",
             "register_fsdp_forward_method"]
    assert sorted(n for n in dir(theirs) if not n.startswith("_")) == names
    for name in names:
        assert (getattr(theirs, name) is getattr(theirs_new, name)) and getattr(ours, name) is getattr(ours_new, name)
    assert sorted(ours.__all__) == names
