"""save_state: whole or nothing, and never a pickled object."""

import os

import numpy as np
import pytest

from explorer import FrequentDirections
from explorer.atomic import write_atomic
from explorer.state import load_state, save_state


class Pickles(FrequentDirections):
    def state_dict(self):
        return {**super().state_dict(), "n_seen": 2 ** 70}  # past int64: np.savez would pickle it


def test_a_state_numpy_could_only_pickle_is_refused_and_the_old_file_stays(tmp_path):
    path = tmp_path / "sketch.npz"
    good = FrequentDirections(3, 2)
    good.extend(np.eye(3))
    save_state(good, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="never stores a pickled object"):
        save_state(Pickles(3, 2), path)
    assert path.read_bytes() == before
    assert np.array_equal(load_state(path).gram(), good.gram())


def test_a_save_that_fails_midway_leaves_the_file_that_was_there(tmp_path, monkeypatch):
    path = tmp_path / "sketch.npz"
    save_state(FrequentDirections(3, 2), path)
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    sk = FrequentDirections(3, 2)
    sk.extend(np.eye(3))
    with pytest.raises(OSError, match="No space"):
        save_state(sk, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sketch.npz"]  # no temporary left


def test_a_path_without_the_suffix_gets_it_as_np_savez_gives_it(tmp_path):
    save_state(FrequentDirections(3, 2), tmp_path / "plain")
    assert (tmp_path / "plain.npz").is_file()


def test_atomic_files_get_the_mode_an_ordinary_open_gives(tmp_path):
    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a", b"x")
        assert (tmp_path / "a").stat().st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "a", 0o600)
        write_atomic(tmp_path / "a", b"y")  # a replaced file keeps its mode
        assert (tmp_path / "a").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(umask)



@pytest.mark.timeout(120)
def test_a_state_matrix_of_the_wrong_shape_is_refused_before_it_is_read(tmp_path):
    """Before: FTRL-FM checked theta's shape with np.shape(reader.raw(...)), which inflated
    the whole member first (here 288 MB of compressed zeros, 0.3 MB on disk)."""
    import tracemalloc

    from explorer import FTRLFM

    state = FTRLFM(3, eta=0.1).state_dict()
    state["theta"] = np.zeros((6000, 6000))
    path = tmp_path / "ftrl.npz"
    np.savez_compressed(path, **state)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="theta"):
            load_state(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, f"{peak / 1e6:.0f} MB traced to refuse a wrong shape"
