"""Read a flight-recorder pickle without running pickle's machine.

PyTorch writes the flight-recorder dump (`_dump_fr_trace`, one file per rank) as a protocol-2
pickle of plain containers. `pickle.load` on an uploaded file would run whatever callable the
file names, so this walks the opcodes itself (`pickletools.genops` only decodes them) and
implements the few that build dicts, lists, tuples, strings, bytes, numbers, booleans and None.
Any other opcode (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, EXT*, PERSID...) is
refused with `PickleRefused` before anything is built from it.
"""

from __future__ import annotations

import io
import pickletools

from rootcause.hangs.errors import BundleError

MARK = object()

# Each opcode this reader implements; every other one is refused by name.
_PUSH_ARG = {
    "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "BINBYTES", "SHORT_BINBYTES",
    "BINBYTES8", "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "BINFLOAT", "FLOAT",
    "BINSTRING", "SHORT_BINSTRING", "STRING", "LONG",
}  # fmt: skip
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_NOOP = {"PROTO", "FRAME"}
MAX_ITEMS = 5_000_000  # containers and scalars together: a pickle bomb of memo refs stops here


class PickleRefused(BundleError):
    """The pickle builds something other than plain data, or is not a valid pickle."""


def _pop_mark(stack: list[object]) -> list[object]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is MARK:
            items = stack[i + 1 :]
            del stack[i:]
            return items
    raise PickleRefused("malformed pickle: no MARK")


def loads(data: bytes) -> object:
    """The value the pickle describes, if it is made only of plain data."""
    stack: list[object] = []
    memo: dict[int, object] = {}
    built = 0
    try:
        for op, arg, pos in pickletools.genops(io.BytesIO(data)):
            name = op.name
            built += 1
            if built > MAX_ITEMS:
                raise PickleRefused("pickle has too many items")
            if name in _NOOP:
                continue
            if name in _PUSH_ARG or name == "INT":
                stack.append(arg)
            elif name in _CONSTANTS:
                stack.append(_CONSTANTS[name])
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "MARK":
                stack.append(MARK)
            elif name in ("BINPUT", "LONG_BINPUT", "PUT"):
                memo[_index(arg)] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                stack.append(memo[_index(arg)])
            elif name == "SETITEM":
                value = stack.pop()
                key = stack.pop()
                _setitem(stack[-1], key, value)
            elif name == "SETITEMS":
                items = _pop_mark(stack)
                for k, v in zip(items[::2], items[1::2], strict=True):
                    _setitem(stack[-1], k, v)
            elif name == "APPEND":
                value = stack.pop()
                _list(stack[-1]).append(value)
            elif name == "APPENDS":
                items = _pop_mark(stack)
                _list(stack[-1]).extend(items)
            elif name == "LIST":
                stack.append(_pop_mark(stack))
            elif name == "TUPLE":
                stack.append(tuple(_pop_mark(stack)))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                items = stack[-n:]
                del stack[-n:]
                stack.append(tuple(items))
            elif name == "DICT":
                items = _pop_mark(stack)
                stack.append(dict(zip(items[::2], items[1::2], strict=True)))
            elif name == "STOP":
                if len(stack) != 1:
                    raise PickleRefused("malformed pickle: stack not empty at STOP")
                return stack[0]
            else:
                raise PickleRefused(
                    f"pickle opcode {name} at byte {pos} would build an object other than "
                    "plain data (dict, list, tuple, str, bytes, int, float, bool, None); refused"
                )
    except PickleRefused:
        raise
    except (ValueError, IndexError, KeyError, TypeError, EOFError) as exc:
        raise PickleRefused(f"not a readable pickle: {exc}") from None
    raise PickleRefused("malformed pickle: no STOP")


def _index(arg: object) -> int:
    if not isinstance(arg, (int, str)):
        raise PickleRefused("malformed pickle: a memo index that is not a number")
    return int(arg)


def _setitem(target: object, key: object, value: object) -> None:
    if not isinstance(target, dict):
        raise PickleRefused("malformed pickle: SETITEM on a non-dict")
    try:
        target[key] = value
    except TypeError:
        raise PickleRefused("malformed pickle: unhashable dict key") from None


def _list(target: object) -> list[object]:
    if not isinstance(target, list):
        raise PickleRefused("malformed pickle: APPEND on a non-list")
    return target
