"""Architecture configs and workloads as editable dicts, dotted-key overrides, YAML writing."""
import copy
import os

import yaml

from ._errors import TesseraError

_MISSING = object()


def _parts(key):
    if isinstance(key, (list, tuple)):
        return list(key)
    if not isinstance(key, str) or not key or any(p == "" for p in key.split(".")):
        raise KeyError(f"not a dotted key: {key!r} (e.g. 'array.rows', 'array.mac_modes.0.rate')")
    return key.split(".")


def _index(container, part, key):
    """The list index a key component names: a numeric component indexes an existing entry,
    counted from 0. Negative indices (Python's from-the-end), signs, spaces and underscores
    are refused with KeyError, as docs/python.md promises (issue 34 item 6)."""
    if isinstance(part, bool):
        raise KeyError(f"{key}: {part!r} indexes a list, so it must be a number")
    if isinstance(part, int):
        i = part
    elif isinstance(part, str) and part.isascii() and part.isdigit():
        i = int(part)
    elif isinstance(part, str) and part[:1] == "-" and part[1:].isascii() and part[1:].isdigit():
        i = -1  # "-0" too: a sign is never an index
    else:
        raise KeyError(f"{key}: '{part}' indexes a list, so it must be a number")
    if i < 0:
        raise KeyError(f"{key}: index {part} is negative; a numeric component indexes an existing entry, "
                       f"counted from 0 (the list has {len(container)} entries)")
    if i >= len(container):
        raise KeyError(f"{key}: index {i} is out of range (the list has {len(container)} entries)")
    return i


def get_path(d, key, default=_MISSING):
    """The value at a dotted key: get_path(arch, "array.rows"); a numeric component indexes a list
    ("array.mac_modes.0.rate"). A missing key raises KeyError naming it, unless `default` is given."""
    node = d
    parts = _parts(key)
    for n, part in enumerate(parts):
        here = ".".join(map(str, parts[: n + 1]))
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list):
            try:
                node = node[_index(node, part, here)]
            except KeyError:
                if default is not _MISSING:
                    return default
                raise
        else:
            if default is not _MISSING:
                return default
            raise KeyError(f"{here}: no such key")
    return node


def set_path(d, key, value):
    """Sets a dotted key in a nested dict, in place, and returns the dict:
    set_path(arch, "array.rows", 128). Missing mappings on the way are created (for the optional
    keys a config may leave out, e.g. "controller.queue_depth"); a numeric component indexes an
    existing list ("array.mac_modes.3.rate"). Whether the key means anything is for Tessera to say:
    an unknown key is an error naming it when the config is run."""
    parts = _parts(key)
    node = d
    for n, part in enumerate(parts):
        here = ".".join(map(str, parts[: n + 1]))
        last = n == len(parts) - 1
        if isinstance(node, list):
            i = _index(node, part, here)
            if last:
                node[i] = value
            else:
                node = node[i]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            parent = ".".join(map(str, parts[:n]))
            raise KeyError(f"{here}: '{parent}' is a {type(node).__name__} ({node!r}), not a mapping or a list")
        if not last and not isinstance(node, (dict, list)):
            raise KeyError(f"{key}: '{here}' is a {type(node).__name__} ({node!r}), not a mapping or a list")
    return d


def apply_overrides(d, overrides):
    """A deep copy of `d` with every {dotted key: value} of `overrides` set (set_path)."""
    out = copy.deepcopy(d)
    for key, value in (overrides or {}).items():
        set_path(out, key, value)
    return out


def _load(path, what):
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise TesseraError(f"{where}: not valid YAML: {e.problem}") from None
    except yaml.YAMLError as e:
        raise TesseraError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise TesseraError(f"{path}: not {what} (the top level is not a mapping)")
    return data


# Config composition (docs/configs.md, "Composition"), the rules of YamlNode::load_composed in
# sim/common/yaml_compose.cpp: `base: <path>` (relative to the file naming it) is loaded first;
# maps merge key by key, scalars and lists replace whole, a key set to null removes the inherited
# one, and `base` itself is dropped. At most MAX_BASE_CHAIN files in a chain.
MAX_BASE_CHAIN = 16


def _base_location(path):
    """"file:line:col" of the `base:` value in `path` (for errors about it)."""
    try:
        with open(path, encoding="utf-8") as f:
            root = yaml.compose(f, Loader=yaml.SafeLoader)
        for key, value in root.value:
            if key.value == "base":
                return f"{path}:{value.start_mark.line + 1}:{value.start_mark.column + 1}"
    except (OSError, yaml.YAMLError, AttributeError, TypeError):
        pass
    return path


def _merge_configs(base, derived):
    """`derived` over `base` (dicts, neither changed): maps merge key by key, anything else
    replaces whole, a None value removes the key. Key order: the base's, then new keys."""
    out = dict(base)
    for key, value in derived.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_configs(out[key], value)
        else:
            out[key] = value
    return out


def _load_composed(path, chain):
    data = _load(path, "an architecture config")
    if "base" not in data:
        return data
    base = data.pop("base")
    where = f"{_base_location(path)}: base"
    if not isinstance(base, str) or not base:
        raise TesseraError(f"{where}: expected the path of a config file to start from")
    base_path = base if os.path.isabs(base) else os.path.join(os.path.dirname(path), base)
    real = os.path.realpath(base_path)
    shown = " -> ".join([p for p, _ in chain] + [base_path])
    if any(seen == real for _, seen in chain):
        raise TesseraError(f"{where}: config bases form a cycle: {shown}")
    if len(chain) >= MAX_BASE_CHAIN:
        raise TesseraError(f"{where}: a chain of config bases may hold at most {MAX_BASE_CHAIN} files: {shown}")
    if not os.path.exists(base_path):
        raise TesseraError(f"{where}: no such config file '{base_path}'")
    if not os.path.isfile(base_path):
        raise TesseraError(f"{where}: '{base_path}' is not a file")
    return _merge_configs(_load_composed(base_path, chain + [(base_path, real)]), data)


def load_arch(path, overrides=None):
    """An architecture config (configs/*.yaml, docs/configs.md) as a dict to edit, with optional
    dotted-key overrides: load_arch("configs/tpu-v1.yaml", {"array.rows": 128}). A config that
    starts with `base:` comes composed (its chain of bases merged), so the dict stands alone."""
    path = os.fspath(path)
    return apply_overrides(_load_composed(path, [(path, os.path.realpath(path))]), overrides)


def load_workload(path, overrides=None):
    """A YAML workload graph (workloads/*.yaml, docs/workloads.md) as a dict to edit, with
    optional dotted-key overrides: load_workload("workloads/tpu/mlp0.yaml", {"layers.0.units": 4096})."""
    return apply_overrides(_load(path, "a workload graph"), overrides)


def plain(value):
    """`value` with numpy scalars turned into Python numbers and tuples into lists (what YAML
    writes), so values taken from a DataFrame can go straight into a config."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def write_yaml(data, path, comment=None):
    """Writes a dict as YAML (key order kept) for Tessera to read; returns the path."""
    text = yaml.safe_dump(plain(data), sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    if comment:
        text = "".join(f"# {line}\n" for line in comment.splitlines()) + text
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
