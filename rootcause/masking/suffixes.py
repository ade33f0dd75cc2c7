"""Which last labels make a dotted name a host name: the Public Suffix List's top-level
domains (``publicsuffixlist``'s bundled copy, read from the package, never fetched), less the
ones logs mostly print as file extensions or attribute names (``trainer.py``, ``ckpt.pt``,
``torch.distributed.run``), plus the private names clusters use (``.internal``, ``.cluster``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

# Well-known suffixes of the old hand list: a two-label name under them (acme.com) is a host.
COMMON_TLDS = frozenset(b"com net org io ai co uk de fr cn jp ch nl us ca au edu gov cloud".split())
# Not a registry's: what clusters and cloud VPCs name their machines under.
PRIVATE_TLDS = frozenset(b"internal local lan cluster localdomain intra corp".split())
# Top-level domains that are far more often a file extension, a C/CUDA source, or a method or
# attribute in a traceback than a host's last label.
_NOT_HOSTS = frozenset(
    b"py sh pt cc cu so md rs go js ts tf mk ps pm zip mov fit run save data cat pid select "
    b"ninja to total mm name network in is as at be do me id map app log bin win java ml "
    b"lat".split()
)


@lru_cache(maxsize=1)
def registry_tlds() -> frozenset[bytes]:
    """The ICANN section's top-level labels, ASCII ones (punycode included)."""
    text = files("publicsuffixlist").joinpath("public_suffix_list.dat").read_bytes()
    tlds = set()
    for raw in text.split(b"\n"):
        line = raw.strip()
        if b"END ICANN DOMAINS" in line:
            break
        if not line or line.startswith(b"//"):
            continue
        last = line.rsplit(b".", 1)[-1].lstrip(b"!*").lower()
        if last.isascii() and (last.isalpha() or last.startswith(b"xn--")):
            tlds.add(last)
    return frozenset(tlds)


def host_tlds() -> list[bytes]:
    """For the host-name pattern, longest first (an alternation takes the first that fits)."""
    tlds = (registry_tlds() - _NOT_HOSTS) | COMMON_TLDS | PRIVATE_TLDS
    return sorted(tlds, key=lambda t: (-len(t), t))
