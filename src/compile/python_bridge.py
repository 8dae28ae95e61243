# strata's Python bridge: one interpreter per compile runs kadet inputs and
# Python jinja2 filter functions for the strata binary, which ships this file
# inside itself. It speaks JSON lines: one request per line on stdin, one
# reply per line on the original stdout. User code's print() goes to stderr so
# it cannot corrupt the protocol.
#
# The `kapitan.*` modules below are a small stand-in for what kadet inputs
# import from Kapitan 0.36.3 (kapitan/inputs/kadet.py), so no Kapitan
# install is needed: only the `kadet` package from PyPI.

import contextvars
import inspect
import json
import os
import sys
import traceback
import types
from functools import cache
from importlib.util import module_from_spec, spec_from_file_location

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
# Kapitan's entry script puts its own directory first, never the cwd.
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]

KADET_COMPONENT_MODULE_PREFIX = "kadet_component_"


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, leaf = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], leaf, m)
    return m


class CompileError(Exception):
    pass


class KapitanError(Exception):
    pass


class _Args(dict):
    """argparse.Namespace that also answers dict-style `.get`."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None


# kadet (and the pydantic it imports) loads on first use: a compile that
# only needs Jinja2 filter functions does not pay for it.
kadet = None
BaseModel = BaseObj = Dict = None
_kadet_error = None


def _load_kadet():
    global kadet, BaseModel, BaseObj, Dict, _kadet_error
    if kadet is not None or _kadet_error is not None:
        return kadet is not None
    try:
        import kadet as _k
    except Exception as e:  # noqa: BLE001 - reported to strata as text
        _kadet_error = f"{type(e).__name__}: {e}"
        return False
    kadet = _k
    BaseModel, BaseObj, Dict = _k.BaseModel, _k.BaseObj, _k.Dict
    _k.ABORT_EXCEPTION_TYPE = CompileError
    m = sys.modules["kapitan.inputs.kadet"]
    m.__dict__.update(BaseModel=BaseModel, BaseObj=BaseObj, Dict=Dict, kadet=_k)
    return True


current_target = contextvars.ContextVar("kapitan_current_target", default=None)
search_paths = contextvars.ContextVar("current search_paths in thread")

cached = _module(
    "kapitan.cached",
    inv={},
    global_inv={},
    inventory_global_kadet={},
    args=_Args(search_paths=[]),
    dot_kapitan={},
)


@cache
def inventory_global(lazy=False):
    if not cached.inventory_global_kadet:
        cached.inventory_global_kadet = Dict(cached.global_inv, default_box=lazy)
    return cached.inventory_global_kadet


def inventory(lazy=False):
    return inventory_global(lazy)[current_target.get()]


def inventory_frozen():
    return kadet.Box(data=inventory().dump(), frozen_box=True)


def module_from_path(path, check_name=None):
    if not os.path.isdir(path):
        raise FileNotFoundError(f"path: {path} must be an existing directory")
    module_name = os.path.basename(os.path.normpath(path))
    init_path = os.path.join(path, "__init__.py")
    spec = spec_from_file_location(
        f"{KADET_COMPONENT_MODULE_PREFIX}{module_name}", init_path
    )
    mod = module_from_spec(spec)
    if spec is None:
        raise ModuleNotFoundError(f"Could not load module in path {path}")
    if check_name is not None and check_name != module_name:
        raise ModuleNotFoundError(
            f"Module name {module_name} does not match check_name {check_name}"
        )
    return mod, spec


def load_from_search_paths(module_name):
    for path in search_paths.get():
        _path = os.path.join(path, module_name)
        try:
            mod, spec = module_from_path(_path, check_name=module_name)
        except (ModuleNotFoundError, FileNotFoundError):
            continue
        try:
            spec.loader.exec_module(mod)
        except ModuleNotFoundError as e:
            # Kapitan reports this as the module itself missing; say which
            # import inside it failed (a package missing from this Python).
            raise ModuleNotFoundError(
                f"Could not load module name {module_name}: {_path} imports "
                f"`{e.name}`, which this Python does not have ({e})"
            ) from e
        return mod
    raise ModuleNotFoundError(f"Could not load module name {module_name}")


def _to_dict(obj):
    if isinstance(obj, BaseObj | BaseModel):
        for k, v in obj.root.items():
            obj.root[k] = _to_dict(v)
        return obj.root.to_dict()
    if isinstance(obj, list):
        return [_to_dict(item) for item in obj]
    if isinstance(obj, dict):
        for k, v in obj.items():
            obj[k] = _to_dict(v)
        return obj
    return obj


def render_jinja2_file(name, context, jinja2_filters=None, search_paths=None):
    import jinja2

    path, filename = os.path.split(name)
    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        loader=jinja2.FileSystemLoader([path or "./"] + (search_paths or [])),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(_kapitan_filters())
    env.filters.update(_filters)
    return env.get_template(filename).render(context)


def _kapitan_filters():
    """Kapitan's own Jinja2 filters (`load_jinja2_filters`), for templates
    that Python code renders; templates of jinja2 entries use strata's."""
    import base64
    import glob
    import hashlib
    import re
    import time

    import yaml

    def to_bool(a):
        if a is None or isinstance(a, bool):
            return a
        if isinstance(a, str):
            a = a.lower()
        return a in ("yes", "on", "1", "true", 1)

    def regex_replace(value="", pattern="", replacement="", ignorecase=False):
        flags = re.IGNORECASE if ignorecase else 0
        return re.compile(pattern, flags=flags).sub(replacement, value)

    def regex_findall(value, regex, multiline=False, ignorecase=False):
        flags = (re.IGNORECASE if ignorecase else 0) | (re.MULTILINE if multiline else 0)
        return re.findall(regex, value, flags)

    def ternary(value, true_val, false_val, none_val=None):
        if value is None and none_val is not None:
            return none_val
        return true_val if bool(value) else false_val

    def strftime(string_format, second=None):
        return time.strftime(string_format, time.localtime(None if second is None else int(second)))

    return {
        "sha256": lambda s: hashlib.sha256(s.encode("UTF-8")).hexdigest(),
        "b64encode": lambda s: base64.b64encode(s.encode("UTF-8")).decode("UTF-8"),
        "b64decode": lambda s: base64.b64decode(s).decode("UTF-8"),
        "yaml": lambda o: yaml.safe_dump(o, default_flow_style=False),
        "fileglob": lambda p: [g for g in glob.glob(p) if os.path.isfile(g)],
        "bool": to_bool,
        "strftime": strftime,
        "regex_replace": regex_replace,
        "regex_escape": re.escape,
        "regex_findall": regex_findall,
        "reveal_maybe": lambda ref: ref,
        "ternary": ternary,
    }


def prune_empty(d):
    """Kapitan's `utils.prune_empty`: drops empty lists and dicts."""
    if not isinstance(d, dict | list):
        return d
    if isinstance(d, list):
        if len(d) > 0:
            return [v for v in (prune_empty(v) for v in d) if v is not None]
    if isinstance(d, dict):
        if len(d) > 0:
            return {
                k: v
                for k, v in ((k, prune_empty(v)) for k, v in d.items())
                if v is not None
            }


class HelmTemplateError(KapitanError):
    pass


def _host(req):
    """Asks strata for something only it does (running helm under the
    compile's rules) in the middle of a request; strata answers on stdin."""
    _proto.write(json.dumps({"host": req}, allow_nan=False, separators=(",", ":")) + "\n")
    _proto.flush()
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("strata closed the bridge")
    return json.loads(line)


_helm_chart = None


def _helm_attr(name):
    # Kapitan's HelmChart is a kadet BaseModel: built once kadet is loaded,
    # so `class MyHelmChart(HelmChart)` in a generator subclasses it.
    global _helm_chart
    if name == "HelmChart" and _load_kadet():
        if _helm_chart is None:

            class HelmChart(BaseModel):
                chart_dir: str
                helm_params: dict = {}
                helm_values: dict = {}
                helm_path: str = None

                def new(self):
                    for obj in self.load_chart():
                        self.root[
                            f"{obj['metadata']['name'].lower()}-{obj['kind'].lower().replace(':', '-')}"
                        ] = BaseObj.from_dict(obj)

                def load_chart(self):
                    # strata runs `helm template` (its argument checks, a
                    # confined compile's rules) and returns helm's stdout
                    # documents, None dropped, as Kapitan's render_chart.
                    reply = _host(
                        {
                            "helm": {
                                "chart_dir": self.chart_dir,
                                "helm_params": _to_dict(self.helm_params) or {},
                                "helm_values": _to_dict(self.helm_values) or {},
                                "helm_path": self.helm_path,
                            }
                        }
                    )
                    if not reply.get("ok"):
                        raise HelmTemplateError(reply.get("error", "helm failed"))
                    return reply["docs"]

            HelmChart.__module__ = "kapitan.inputs.helm"
            _helm_chart = HelmChart
        return _helm_chart
    raise AttributeError(f"module 'kapitan.inputs.helm' has no attribute '{name}'")


def _find(search_paths, name):
    for path in search_paths:
        full = os.path.join(path, name)
        if os.path.exists(full):
            return full
    return None


def _res_jinja2_render_file(search_paths, name, ctx):
    full = _find(search_paths, name)
    if full is None:
        raise OSError(f"Could not find file {name}")
    return render_jinja2_file(full, json.loads(ctx), search_paths=search_paths)


def _res_yaml_load(search_paths, name):
    import yaml

    full = _find(search_paths, name) if name.endswith((".yml", ".yaml")) else None
    if full is None:
        raise OSError(f"could not find any input yaml file: {name}")
    with open(full) as f:
        return json.dumps(yaml.safe_load(f.read()))


def _res_yaml_load_stream(search_paths, name):
    import yaml

    full = _find(search_paths, name) if name.endswith((".yml", ".yaml")) else None
    if full is None:
        raise OSError(f"could not find any input yaml file: {name}")
    with open(full) as f:
        return json.dumps(list(yaml.load_all(f.read(), Loader=yaml.SafeLoader)))


def _res_read_file(search_paths, name):
    full = _find(search_paths, name)
    if full is None:
        raise OSError(f"Could not find file {name}")
    with open(full, newline="") as f:
        return f.read()


def _res_file_exists(search_paths, name):
    full = _find(search_paths, name)
    return {"exists": full is not None, "path": full or ""}


def _res_dir_files_list(search_paths, name):
    full = _find(search_paths, name)
    if full is None:
        raise OSError(f"Could not find folder {name}")
    return [f for f in os.listdir(full) if os.path.isfile(os.path.join(full, f))]


def _res_dir_files_read(search_paths, name):
    full = _find(search_paths, name)
    if full is None:
        return None
    return {f: _res_read_file([full], f) for f in _res_dir_files_list([full], "")}


def _res_yaml_dump(obj):
    import yaml

    return yaml.safe_dump(json.loads(obj), default_flow_style=False)


def _res_yaml_dump_stream(obj):
    import yaml

    return yaml.safe_dump_all(json.loads(obj), default_flow_style=False)


def _res_inventory(search_paths=None, target_name=None, inventory_path="./inventory"):
    # The compile's own inventory (as strata rendered it); another
    # inventory_path is not read.
    if target_name:
        return cached.global_inv[target_name]
    return cached.global_inv


_kapitan = _module("kapitan", cached=cached)
_module(
    "kapitan.resources",
    jinja2_render_file=_res_jinja2_render_file,
    yaml_load=_res_yaml_load,
    yaml_load_stream=_res_yaml_load_stream,
    read_file=_res_read_file,
    file_exists=_res_file_exists,
    dir_files_list=_res_dir_files_list,
    dir_files_read=_res_dir_files_read,
    yaml_dump=_res_yaml_dump,
    yaml_dump_stream=_res_yaml_dump_stream,
    inventory=_res_inventory,
)
_kapitan.__path__ = []
_module(
    "kapitan.errors",
    CompileError=CompileError,
    KapitanError=KapitanError,
    HelmTemplateError=HelmTemplateError,
)
_module("kapitan.defaults", KADET_COMPONENT_MODULE_PREFIX=KADET_COMPONENT_MODULE_PREFIX)
_module("kapitan.utils", render_jinja2_file=render_jinja2_file, prune_empty=prune_empty)
_inputs = _module("kapitan.inputs")
_inputs.__path__ = []
_module("kapitan.inputs.helm", __getattr__=_helm_attr, HelmTemplateError=HelmTemplateError)
def _kadet_attr(name):
    # `from kapitan.inputs.kadet import BaseObj` before any kadet input ran
    # (a filter file, say) loads kadet then.
    if name in ("BaseModel", "BaseObj", "Dict", "kadet") and _load_kadet():
        return sys.modules["kapitan.inputs.kadet"].__dict__[name]
    raise AttributeError(f"module 'kapitan.inputs.kadet' has no attribute '{name}'")


_module(
    "kapitan.inputs.kadet",
    __getattr__=_kadet_attr,
    CompileError=CompileError,
    inventory=inventory,
    inventory_global=inventory_global,
    inventory_frozen=inventory_frozen,
    load_from_search_paths=load_from_search_paths,
    module_from_path=module_from_path,
    search_paths=search_paths,
    current_target=current_target,
)


def _error_text(exc):
    """The exception chain, innermost cause last, without bridge frames."""
    parts = []
    e = exc
    while e is not None:
        tb = [
            f
            for f in traceback.extract_tb(e.__traceback__)
            if f.filename != "<string>"
        ]
        where = ""
        if tb:
            where = f" ({tb[-1].filename}:{tb[-1].lineno})"
        parts.append(f"{type(e).__name__}: {e}{where}")
        e = e.__cause__ or e.__context__
    return "\n  caused by ".join(parts)


def _kadet(req):
    if not _load_kadet():
        return {"ok": True, "missing": _kadet_error}
    target = req["target"]
    token = current_target.set(target)
    try:
        search_paths.set(req["search_paths"])
        cached.args["search_paths"] = req["search_paths"]
        input_params = dict(req["input_params"])
        input_params.setdefault("compile_path", req["compile_path"])
        kadet_module, spec = module_from_path(req["input_path"])
        sys.modules[spec.name] = kadet_module
        spec.loader.exec_module(kadet_module)
        arg_spec = inspect.getfullargspec(kadet_module.main)
        if len(arg_spec.args) > 1:
            raise ValueError(f"Kadet {spec.name} main parameters not equal to 1 or 0")
        try:
            if len(arg_spec.args) == 1:
                out = kadet_module.main(input_params)
            else:
                out = kadet_module.main()
        except Exception as exc:
            raise CompileError(
                f"Could not load Kadet module: {spec.name[16:]}"
            ) from exc
        out = _to_dict(out)
        if not out:
            return {"ok": True, "output": None}
        if not isinstance(out, dict):
            raise CompileError(
                f"Kadet module {spec.name[16:]}: main() returned {type(out).__name__}, "
                "not a BaseObj or dict of output files"
            )
        return {"ok": True, "output": out}
    finally:
        current_target.reset(token)


_filters = {}


def _load_filters(req):
    path = req["path"]
    try:
        module_name = os.path.basename(path).split(".")[0]
        spec = spec_from_file_location(module_name, path)
        mod = module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception as e:
        raise OSError(
            f"jinja2 failed to render, could not load filter at {path}: {e}"
        ) from e
    names = []
    for name in dir(mod):
        f = getattr(mod, name)
        if isinstance(f, types.FunctionType):
            _filters[name] = f
            names.append(name)
    return {"ok": True, "names": names}


def _call_filter(req):
    f = _filters[req["name"]]
    return {"ok": True, "value": f(*req["args"], **req.get("kwargs", {}))}


def _init(req):
    cached.global_inv = req["inventory"]
    cached.inv = req["inventory"]
    cached.inventory_global_kadet = {}
    inventory_global.cache_clear()
    return {"ok": True}


_ops = {
    "init": _init,
    "kadet": _kadet,
    "load_filters": _load_filters,
    "filter": _call_filter,
}


def _reply(obj):
    try:
        line = json.dumps(obj, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        line = json.dumps(
            {"ok": False, "error": f"the result cannot be written as YAML/JSON: {e}"}
        )
    _proto.write(line + "\n")
    _proto.flush()


def _main():
    version = sys.version.split()[0]
    # kadet and this shim use 3.10 syntax (`X | Y` in isinstance).
    _reply({"ready": sys.version_info >= (3, 10), "python": version})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            _reply(_ops[req["op"]](req))
        except (Exception, SystemExit) as e:  # noqa: BLE001 - every failure goes back to strata
            _reply({"ok": False, "error": _error_text(e)})


_main()
