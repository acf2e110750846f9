"""The TLP packetiser: hand-worked cases, a loop reference, bytes conserved, TLP lists."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.model.errors import ConfigError
from hostlink.model.pcie import spec, tlp


def _ceil(x, u):
    return -(-x // u) * u


def reference_reads(addr, size, mrrs, mps, rcb, split, framing, hdr=16, ecrc=0, flit=False):
    """One read, split TLP by TLP with loops, straight from the rules in tlp.py's docstring."""
    s = addr % 4096
    e = s + size
    mrds = []
    a = s
    while a < e:
        b = min(e, (a // mrrs + 1) * mrrs)       # MRRS-aligned split (also 4 KiB)
        mrds.append((a, b))
        a = b
    cpls = []
    for a, b in mrds:
        x = a
        while x < b:
            if split == "rcb":                       # one completion per RCB block
                y = min(b, (x // rcb + 1) * rcb)
            elif _ceil(b, 4) - (x // 4) * 4 <= mps:  # the rest fits in one (whole DWs)
                y = b
            else:                                    # largest that fits and ends on RCB
                y = ((x // 4) * 4 + mps) // rcb * rcb
            cpls.append((x, y))
            x = y
    scale = 256 / 236 if flit else 1.0
    up = 0.0
    for a, b in mrds:
        ohc = 4 if flit and (a % 4 or b % 4) else 0
        up += (hdr + ecrc + ohc) * scale + framing
    down = 0.0
    data = credit = 0
    for x, y in cpls:
        d = _ceil(y, 4) - (x // 4) * 4
        data += d
        credit += _ceil(d, 16)
        down += (12 + ecrc + d) * scale + framing
    return {"n_mrd": len(mrds), "n_cpld": len(cpls), "cpl_data_B": data, "cpl_credit_B": credit,
            "up_wire_B": up, "down_wire_B": down, "mrds": mrds, "cpls": cpls}


def test_aligned_32B_read_gen3():
    p = tlp.packetize_reads(0, 32, gen=3)
    assert (p.n_mrd, p.n_cpld) == (1, 1)
    assert p.up_wire_B == 8 + 16            # framing + 4DW MRd header
    assert p.down_wire_B == 8 + 12 + 32     # framing + CplD header + data
    assert p.down_efficiency == pytest.approx(32 / 52)


def test_rcb_policy_splits_128B_into_two_completions():
    p = tlp.packetize_reads(64, 128, gen=3, rcb_B=64, cpl_split="rcb")
    assert p.n_cpld == 2
    assert p.down_wire_B == 2 * (8 + 12) + 128
    q = tlp.packetize_reads(64, 128, gen=3, rcb_B=64, cpl_split="mps")
    assert q.n_cpld == 1


def test_partial_dw_read_pads_payload_and_credits():
    p = tlp.packetize_reads(2, 100, gen=3)      # bytes 2..101 travel as DWs 0..103
    assert p.payload_B == 100
    assert p.cpl_data_B == 104
    assert p.cpl_credit_B == 112                # 7 data credits of 16 B


def test_large_read_splits_at_mrrs_and_mps():
    p = tlp.packetize_reads(0, 4096, gen=3, mrrs_B=512, mps_B=256)
    assert (p.n_mrd, p.n_cpld) == (8, 16)


def test_unaligned_read_first_completion_ends_on_rcb():
    # [32, 288) is 256 B: one completion (the last need not end on RCB).
    assert tlp.packetize_reads(32, 256, gen=3, mps_B=256, rcb_B=64).n_cpld == 1
    # [32, 332) is 300 B > MPS: the first ends at the last RCB boundary within MPS.
    p = tlp.packetize_reads(32, 300, gen=3, mps_B=256, rcb_B=64)
    assert p.n_cpld == 2
    mrd, cpl = tlp.expand_reads(32, 300, gen=3, mps_B=256, rcb_B=64)
    np.testing.assert_array_equal(cpl.addr_offset_B, [32, 256])
    np.testing.assert_array_equal(cpl.payload_B, [224, 76])


def test_completion_payload_counts_whole_dws_against_mps():
    # [1, 513) needs DWs 0..515 (516 B) > MPS 512: two completions, the first
    # ending on an RCB boundary; [4, 516) is exactly 512 B: one completion.
    assert tlp.packetize_reads(1, 512, gen=3, mps_B=512, mrrs_B=1024).n_cpld == 2
    assert tlp.packetize_reads(4, 512, gen=3, mps_B=512, mrrs_B=1024).n_cpld == 1


def test_mrd_and_cpl_counts_mixed_boundaries():
    kw = dict(gen=3, mrrs_B=128, mps_B=128, rcb_B=64)
    assert tlp.packetize_reads(200, 300, cpl_split="mps", **kw).n_cpld == 3
    assert tlp.packetize_reads(200, 300, cpl_split="rcb", **kw).n_cpld == 5
    assert tlp.packetize_reads(200, 300, **kw).n_mrd == 3


def test_reads_never_cross_4KiB():
    p = tlp.packetize_reads(4000, 256, gen=3, mrrs_B=4096, mps_B=4096)
    assert p.n_mrd == 2 and p.n_cpld == 2
    # Only the offset in the page matters.
    q = tlp.packetize_reads(np.uint64(0x7F00_0000_0000 + 4000), 256, gen=3, mrrs_B=4096,
                            mps_B=4096)
    assert q.down_wire_B == p.down_wire_B


def test_flit_mode_packs_into_236_of_256():
    p = tlp.packetize_reads(0, 32, gen=6)
    assert p.up_wire_B == pytest.approx(16 * 256 / 236)
    assert p.down_wire_B == pytest.approx((12 + 32) * 256 / 236)
    q = tlp.packetize_reads(1, 30, gen=6)       # partial first and last DW: one OHC DW
    assert q.up_wire_B == pytest.approx((16 + 4) * 256 / 236)


def test_framing_override_and_ecrc_and_32bit_addresses():
    p = tlp.packetize_reads(0, 64, gen=4, framing_B=10, ecrc=True, addr_64bit=False)
    assert p.up_wire_B == 10 + 12 + 4
    assert p.down_wire_B == 10 + 12 + 4 + 64
    nan_default = tlp.packetize_reads(0, 64, gen=[3, 3], framing_B=[np.nan, 10])
    np.testing.assert_array_equal(nan_default.down_wire_B, [8 + 12 + 64, 10 + 12 + 64])


def test_writes():
    w = tlp.packetize_writes(200, 300, gen=3, mps_B=128)
    assert w.n_mwr == 3
    assert w.up_wire_B == 3 * (8 + 16) + 300
    rows = tlp.expand_writes(200, 300, gen=3, mps_B=128)
    np.testing.assert_array_equal(rows.payload_B, [56, 128, 116])
    assert rows.wire_B.sum() == pytest.approx(w.up_wire_B)


def test_broadcast_requests_against_configurations():
    sizes = np.array([32, 64, 128])
    mps = np.array([128, 256])[:, None]
    p = tlp.packetize_reads(0, sizes, gen=3, mps_B=mps)
    assert p.down_wire_B.shape == (2, 3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(addr=0, size_B=0), "size_B must be >= 1"),
    (dict(addr=-4, size_B=32), "addr must be >= 0"),
    (dict(addr=0, size_B=32, rcb_B=32), "link.rcb_B: 32"),
    (dict(addr=0, size_B=32, mrrs_B=100), "link.mrrs_B: 100"),
    (dict(addr=0, size_B=32, cpl_split="chunk"), "link.cpl_split: 'chunk'"),
    (dict(addr=0, size_B=32, framing_B=-1.0), "link.framing_B"),
])
def test_bad_input_is_one_clear_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        tlp.packetize_reads(**kwargs)


_mps = st.sampled_from(spec.MPS_CHOICES)
_rcb = st.sampled_from(spec.RCB_CHOICES)


@settings(max_examples=300, deadline=None)
@given(addr=st.integers(0, 1 << 40), size=st.integers(1, 9000), mrrs=_mps, mps=_mps, rcb=_rcb,
       split=st.sampled_from(["mps", "rcb"]), gen=st.sampled_from([1, 3, 5, 6]),
       ecrc=st.booleans())
def test_matches_loop_reference(addr, size, mrrs, mps, rcb, split, gen, ecrc):
    flit = gen == 6
    framing = spec.DEFAULT_FRAMING_B[gen]
    ref = reference_reads(addr, size, mrrs, mps, rcb, split, framing, ecrc=4 * ecrc, flit=flit)
    p = tlp.packetize_reads(addr, size, gen=gen, mrrs_B=mrrs, mps_B=mps, rcb_B=rcb,
                            cpl_split=split, ecrc=ecrc)
    for key in ("n_mrd", "n_cpld", "cpl_data_B", "cpl_credit_B"):
        assert int(getattr(p, key)) == ref[key], key
    assert float(p.up_wire_B) == pytest.approx(ref["up_wire_B"])
    assert float(p.down_wire_B) == pytest.approx(ref["down_wire_B"])

    mrd, cpl = tlp.expand_reads(addr, size, gen=gen, mrrs_B=mrrs, mps_B=mps, rcb_B=rcb,
                                cpl_split=split, ecrc=ecrc)
    assert list(zip(mrd.addr_offset_B, mrd.addr_offset_B + mrd.length_B)) == ref["mrds"]
    assert list(zip(cpl.addr_offset_B, cpl.addr_offset_B + cpl.payload_B)) == ref["cpls"]
    assert mrd.wire_B.sum() == pytest.approx(float(p.up_wire_B))
    assert cpl.wire_B.sum() == pytest.approx(float(p.down_wire_B))


@settings(max_examples=200, deadline=None)
@given(addrs=st.lists(st.integers(0, 1 << 48), min_size=1, max_size=20),
       sizes=st.lists(st.integers(1, 5000), min_size=20, max_size=20),
       mrrs=_mps, mps=_mps, rcb=_rcb, split=st.sampled_from(["mps", "rcb"]))
def test_bytes_conserved_and_rules_kept(addrs, sizes, mrrs, mps, rcb, split):
    addr = np.array(addrs, dtype=np.uint64)
    size = np.array(sizes[:len(addrs)])
    p = tlp.packetize_reads(addr, size, gen=4, mrrs_B=mrrs, mps_B=mps, rcb_B=rcb, cpl_split=split)
    np.testing.assert_array_equal(p.payload_B, size)
    assert np.all(p.cpl_data_B >= size) and np.all(p.cpl_data_B < size + 8)
    mrd, cpl = tlp.expand_reads(addr, size, gen=4, mrrs_B=mrrs, mps_B=mps, rcb_B=rcb,
                                cpl_split=split)
    # Bytes asked == bytes requested by MRds == bytes completed, per read.
    np.testing.assert_array_equal(np.bincount(mrd.request, mrd.length_B, len(size)), size)
    np.testing.assert_array_equal(np.bincount(cpl.request, cpl.payload_B, len(size)), size)
    np.testing.assert_array_equal(np.bincount(cpl.request, minlength=len(size)), p.n_cpld)
    # No TLP over its limit or across 4 KiB; unfinished completions end on RCB.
    assert np.all(_ceil(mrd.addr_offset_B + mrd.length_B, 4) - mrd.addr_offset_B // 4 * 4 <= mrrs)
    assert np.all(cpl.length_B <= (mps if split == "mps" else rcb))   # whole DWs
    for rows, n in ((mrd, mrd.length_B), (cpl, cpl.payload_B)):
        assert np.all(rows.addr_offset_B // 4096 == (rows.addr_offset_B + n - 1) // 4096)
    cpl_end = cpl.addr_offset_B + cpl.payload_B
    mrd_end = (mrd.addr_offset_B + mrd.length_B)[cpl.parent]
    assert np.all((cpl_end == mrd_end) | (cpl_end % rcb == 0))


@settings(max_examples=100, deadline=None)
@given(addr=st.integers(0, 1 << 40), size=st.integers(1, 9000), mps=_mps,
       gen=st.sampled_from([2, 3, 6]))
def test_write_bytes_conserved(addr, size, mps, gen):
    w = tlp.packetize_writes(addr, size, gen=gen, mps_B=mps)
    rows = tlp.expand_writes(addr, size, gen=gen, mps_B=mps)
    assert rows.payload_B.sum() == size == w.payload_B
    assert len(rows) == w.n_mwr
    assert np.all(rows.length_B <= mps)
    assert rows.wire_B.sum() == pytest.approx(float(w.up_wire_B))
    assert w.up_efficiency <= 1
