"""The fact tables of `rules/` (seeding helpers, RNG sources) and what they say
about one call: does it draw from a global RNG, seed one, shuffle a loader,
do CUDA work, run the functions handed to it, or only set a script up.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, FrozenSet, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.core.data import load_toml, rules_directory
from torchdet_lint.core.names import NOT_LITERAL, arg_value, canonical, dict_entry, literal, opaque_keywords
from torchdet_lint.model.parameters import generator_given


def rules_file(name: str) -> Path:
    """A data file of rules/ (see `data.rules_directory`)."""
    path = rules_directory() / name
    if not path.is_file():
        raise FileNotFoundError(f"rules/{name} not found in {path.parent}")
    return path


@dataclass(frozen=True)
class Helper:
    name: str
    covers: FrozenSet[str]
    keyword_covers: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    enabled_by: Optional[Tuple[str, int, bool]] = None  # keyword, position, counts when absent
    dict_keyword_covers: Tuple[Tuple[str, str, FrozenSet[str]], ...] = ()  # argument, dict key, covers
    seed_drawn_when_absent: Optional[Tuple[str, int]] = None  # the seed argument: keyword, position
    none_reseeds: Optional[Tuple[str, int]] = None  # a literal None here: seeded from the clock, `covers` does not hold
    flag_without_workspace: bool = False  # enables the flag without setting CUBLAS_WORKSPACE_CONFIG


@dataclass(frozen=True)
class RngObject:
    name: str
    kind: str
    seed_methods: FrozenSet[str]
    seeded: str  # template of a seeded construction, "" when there is none
    type: str  # template of the object's type, for isinstance checks


@dataclass(frozen=True)
class RandomClasses:
    """Library classes whose construction draws (rules/rng_sources.toml `[[random-classes]]`)."""

    modules: Tuple[str, ...]
    prefix: str
    kind: str
    seeded_by: str = ""  # a method that seeds the object itself
    when_applied: bool = False  # the object draws when applied, not when built

    def matches(self, module: str, last: str) -> bool:
        if not last[:1].isupper() or not last.startswith(self.prefix):
            return False
        if self.prefix and not last[len(self.prefix) : len(self.prefix) + 1].isupper():
            return False  # `Randomizable`, a base class, is no `Rand*` transform
        return any(module == m or module.startswith(m + ".") for m in self.modules)


@dataclass(frozen=True)
class LibraryDraw:
    """A library call that draws from a global generator unless it is given its own
    (`[[draw]]`, `[[method-draw]]`)."""

    kind: str
    seeded_by: Tuple[Tuple[str, Optional[int]], ...]  # (keyword, position or None)
    no_draw: Tuple[Tuple[str, Any], ...] = ()  # (keyword, literal): no draw at all
    requires_import: str = ""

    def draws(self, call: cst.Call) -> bool:
        if opaque_keywords(call):
            return False  # the seed may be in the `**kwargs`
        for keyword, position in self.seeded_by:
            value = arg_value(call, keyword, position)
            if value is not None and literal(value) is not None:
                return False
        for keyword, value in self.no_draw:
            given = arg_value(call, keyword)
            if given is not None and literal(given) == value and type(literal(given)) is type(value):
                return False
        return True


@dataclass(frozen=True)
class PretrainedBuilder:
    """A library builder that loads pretrained weights over the initial ones when asked
    (`[[pretrained-builder]]`): `names` or every builder under `prefix`."""

    names: FrozenSet[str]
    prefix: str
    loaded_when: Tuple[Tuple[str, Optional[int], str], ...]  # (keyword, position or None, "named"/"true")
    kept_by: FrozenSet[str]

    def builds(self, name: str) -> bool:
        return name in self.names or bool(self.prefix) and name.startswith(self.prefix)

    def loads_every_weight(self, call: cst.Call) -> bool:
        if opaque_keywords(call) or any(arg.keyword is not None and arg.keyword.value in self.kept_by for arg in call.args):
            return False  # a `**kwargs` or a new head may keep initial weights
        for keyword, position, wanted in self.loaded_when:
            value = arg_value(call, keyword, position)
            if value is None:
                continue
            if wanted == "true" and literal(value) is True:
                return True
            if wanted == "named" and (type(value) is cst.SimpleString or _attribute_chain(value)):
                return True
        return False


def _attribute_chain(node: cst.BaseExpression) -> bool:
    """`ResNet50_Weights.IMAGENET1K_V2`, `models.ResNet50_Weights.DEFAULT`: a member of a weights
    enum, not an attribute that may hold None (`args.weights`)."""
    if type(node) is not cst.Attribute:
        return False
    owner = node.value
    name = owner.attr.value if type(owner) is cst.Attribute else owner.value if type(owner) is cst.Name else ""
    return name.endswith("Weights")


@dataclass(frozen=True)
class Facts:
    helpers: Dict[str, Helper]
    method_helpers: Dict[str, Tuple[str, FrozenSet[str]]]  # attribute -> (required import, covers)
    cuda_only: FrozenSet[str]
    torch_functions: FrozenSet[str]
    torch_modules: FrozenSet[str]
    torch_prefixes: Tuple[str, ...]
    random_class_modules: FrozenSet[str]
    random_class_names: FrozenSet[str]
    torch_methods: FrozenSet[str]
    unless_generator: FrozenSet[str]
    random_not_drawing: FrozenSet[str]
    numpy_not_drawing: FrozenSet[str]
    rng_objects: Dict[str, RngObject]
    random_classes: Tuple[RandomClasses, ...] = ()
    library_draws: Dict[str, LibraryDraw] = field(default_factory=dict)
    method_draws: Dict[str, LibraryDraw] = field(default_factory=dict)
    # Test harness classes that seed before each test method runs: qualified name -> what they seed.
    test_bases: Dict[str, FrozenSet[str]] = field(default_factory=dict)
    setup_test_bases: FrozenSet[str] = frozenset()  # those that seed in their `setUp`
    pretrained_builders: Tuple[PretrainedBuilder, ...] = ()


@lru_cache(maxsize=None)
def facts() -> Facts:
    helpers_table = load_toml(rules_file("seed_helpers.toml"))
    sources = load_toml(rules_file("rng_sources.toml"))
    helpers = {}
    for entry in helpers_table.get("helper", []):
        enabled = entry.get("enabled-by")
        drawn = entry.get("seed-drawn-when-absent")
        reseeds = entry.get("none-reseeds")
        helpers[entry["name"]] = Helper(
            name=entry["name"],
            covers=frozenset(entry.get("covers", ())),
            keyword_covers=tuple((k, frozenset(v)) for k, v in entry.get("keyword-covers", {}).items()),
            enabled_by=(enabled["keyword"], enabled["position"], enabled.get("default-enabled", False)) if enabled else None,
            dict_keyword_covers=tuple(
                (argument, key, frozenset(covers))
                for argument, keys in entry.get("dict-keyword-covers", {}).items()
                for key, covers in keys.items()
            ),
            seed_drawn_when_absent=(drawn["keyword"], drawn["position"]) if drawn else None,
            none_reseeds=(reseeds["keyword"], reseeds["position"]) if reseeds else None,
            flag_without_workspace=entry.get("flag-without-cublas-workspace", False),
        )
    torch = sources["torch"]

    def seeded_by(entry: Dict[str, Any]) -> Tuple[Tuple[str, Optional[int]], ...]:
        return tuple((item["keyword"], item.get("position")) for item in entry.get("seeded-by", ()))

    library_draws = {
        name: LibraryDraw(entry["kind"], seeded_by(entry)) for entry in sources.get("draw", []) for name in entry["names"]
    }
    method_draws = {
        entry["attribute"]: LibraryDraw(
            entry["kind"], seeded_by(entry), tuple(entry.get("no-draw", {}).items()), entry["requires-import"]
        )
        for entry in sources.get("method-draw", [])
    }
    return Facts(
        helpers=helpers,
        method_helpers={
            e["attribute"]: (e["requires-import"], frozenset(e["covers"])) for e in helpers_table.get("method-helper", [])
        },
        cuda_only=frozenset(e["name"] for e in helpers_table.get("cuda-only", [])),
        torch_functions=frozenset(torch["functions"]),
        torch_modules=frozenset("torch.nn." + name for name in torch["modules"]),
        torch_prefixes=tuple(torch["prefixes"]),
        random_class_modules=frozenset(torch["random_classes_in"]),
        random_class_names=frozenset(torch["random_class_names"]),
        torch_methods=frozenset(torch["methods"]),
        unless_generator=frozenset(torch["unless_generator"]),
        random_not_drawing=frozenset(sources["random"]["not_drawing"]),
        numpy_not_drawing=frozenset(sources["numpy"]["not_drawing"]),
        rng_objects={
            e["name"]: RngObject(e["name"], e["kind"], frozenset(e["seed-methods"]), e["seeded"], e["type"])
            for e in sources["rng-object"]
        },
        random_classes=tuple(
            RandomClasses(tuple(e["modules"]), e["prefix"], e["kind"], e.get("seeded-by", ""), e.get("draws-when") == "applied")
            for e in sources.get("random-classes", [])
        ),
        library_draws=library_draws,
        method_draws=method_draws,
        test_bases={e["name"]: frozenset(e["covers"]) for e in helpers_table.get("test-base", [])},
        setup_test_bases=frozenset(e["name"] for e in helpers_table.get("test-base", []) if e.get("seeds-in-setup")),
        pretrained_builders=tuple(
            PretrainedBuilder(
                frozenset(e.get("names", ())),
                e.get("prefix", ""),
                tuple((w["keyword"], w.get("position"), w["value"]) for w in e["loaded-when"]),
                frozenset(e.get("kept-by", ())),
            )
            for e in sources.get("pretrained-builder", [])
        ),
    )


@dataclass(frozen=True)
class AcceleratorFacts:
    """An object that places a run's work on a device of its choosing (rules/runs.toml)."""

    library: str
    classes: FrozenSet[str]
    cpu_keyword: str
    cpu_value: Any
    device_methods: FrozenSet[str]
    receiver: str  # how an object of unseen construction is spelled (`accelerator`)
    save_state: str
    load_state: str
    states: Tuple[str, ...]

    def on_cpu(self, construction: cst.Call) -> bool:
        """`Accelerator(cpu=True)`: the run stays on the CPU."""
        value = arg_value(construction, self.cpu_keyword)
        if value is None:
            return False
        found = literal(value)
        return found == self.cpu_value and type(found) is type(self.cpu_value)


@lru_cache(maxsize=1)
def accelerators() -> Tuple[AcceleratorFacts, ...]:
    table = load_toml(rules_file("runs.toml"))
    return tuple(
        AcceleratorFacts(
            library=entry["library"],
            classes=frozenset(entry["classes"]),
            cpu_keyword=entry["cpu-when"]["keyword"],
            cpu_value=entry["cpu-when"]["value"],
            device_methods=frozenset(entry["device-methods"]),
            receiver=entry["receiver"],
            save_state=entry["save-state"],
            load_state=entry["load-state"],
            states=tuple(entry["states"]),
        )
        for entry in table.get("accelerator", [])
    )


def truthy_setting(value: Any) -> bool:
    """A switch argument that turns something on: True, "warn"/"error", 1/2, or a non-literal."""
    if value is NOT_LITERAL:
        return True
    if isinstance(value, str):
        return value in ("warn", "error")
    return value is True or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


@lru_cache(maxsize=1)
def flag_helpers_without_workspace() -> FrozenSet[str]:
    """Helpers that can enable the flag without setting `CUBLAS_WORKSPACE_CONFIG` (TDL303)."""
    return frozenset(name for name, helper in facts().helpers.items() if helper.flag_without_workspace)


# The seeding fact of a call that reseeds the global generators from a value drawn at run time
# (`monai.utils.set_determinism(seed=None)`): it seeds nothing, and undoes a seed set before it.
RESEEDED = "reseeded-at-random"


def reseeds_at_random(helper: Helper, call: cst.Call) -> bool:
    if helper.none_reseeds is None:
        return False
    value = arg_value(call, *helper.none_reseeds)
    return value is not None and literal(value) is None


def helper_covers(helper: Helper, call: cst.Call) -> FrozenSet[str]:
    """What one call of a table helper covers, given its arguments."""
    if helper.enabled_by is not None:
        keyword, position, default = helper.enabled_by
        value = arg_value(call, keyword, position)
        if value is None:
            if not default:
                return frozenset()
        elif not truthy_setting(literal(value)):
            return frozenset()
    covered = set() if reseeds_at_random(helper, call) else set(helper.covers)
    for keyword, extra in helper.keyword_covers:
        value = arg_value(call, keyword)
        if value is not None and truthy_setting(literal(value)):
            covered |= extra
    for keyword, key, extra in helper.dict_keyword_covers:
        entry = dict_entry(arg_value(call, keyword), key)
        if entry is not None and truthy_setting(literal(entry.value)):
            covered |= extra
    return frozenset(covered)


def config_helpers(settings) -> Dict[str, FrozenSet[str]]:
    """Config `seed-functions`: canonical qualified name -> what it covers."""
    return {canonical(name): frozenset(covers) for name, covers in getattr(settings, "seed_functions", ())}


def draw_kind(name: Optional[str], call: Optional[cst.Call] = None, context: Any = None) -> Optional[str]:
    """The global RNG a call with this qualified name draws from, if any: a torch draw given a
    generator of its own (`torch.randn(3, generator=g)`) draws from none (see
    `parameters.generator_given`, which reads the file's callers through `context`)."""
    if not name:
        return None
    table = facts()
    head = name.split(".", 1)[0]
    if head == "random":
        rest = name[len("random.") :]
        if rest and "." not in rest and rest not in table.random_not_drawing and not rest.startswith("_"):
            return "random"
        return None
    if head == "numpy":
        if name.startswith("numpy.random."):
            rest = name[len("numpy.random.") :]
            if "." not in rest and rest[:1].islower() and rest not in table.numpy_not_drawing:
                return "numpy"
        return None
    if name in table.torch_modules:
        return "torch"
    if name in table.torch_functions:
        return None if call is not None and generator_given(context, call) else "torch"
    if name in table.unless_generator:
        return None if call is not None and _has_generator(call, name, context) else "torch"
    module, _, last = name.rpartition(".")
    if module in table.random_class_modules and (last.startswith("Random") or last in table.random_class_names):
        return "torch"
    library_draw = table.library_draws.get(name)
    if library_draw is not None:
        return library_draw.kind if call is None or library_draw.draws(call) else None
    for classes in table.random_classes:
        if classes.matches(module, last):
            return classes.kind
    for prefix in table.torch_prefixes:
        # A public builder (`torchvision.models.resnet50`), not the module's plumbing
        # (`models.__dict__.keys()`, `models._utils...`) nor its registry queries.
        if name.startswith(prefix) and last[:1].islower() and not last.startswith(("get_", "list_")):
            if not any(part.startswith("_") for part in name[len(prefix) :].split(".")):
                return "torch"
    return None


def method_draw_kind(
    attribute: Optional[str], call: cst.Call, imported: Sequence[str], first_party: FrozenSet[str] = frozenset()
) -> Optional[str]:
    """The global RNG a library method draws from (`ds.train_test_split(test_size=0.1)` in a file
    that imports Hugging Face `datasets`), matched by name: the object's type is not visible. A
    project's own package of that name (a `datasets/` folder) is not the library."""
    entry = facts().method_draws.get(attribute or "")
    if entry is None or entry.requires_import in first_party or not entry.draws(call):
        return None
    if not any(module.split(".", 1)[0] == entry.requires_import for module in imported):
        return None
    return entry.kind


# The dropouts that take the mode as an argument rather than from a module: (keyword, position) of
# that argument. Given a literal True, they drop after `model.eval()` and under `no_grad` too (the
# deliberate form, Monte Carlo dropout or Tacotron2's prenet); left out, `F.dropout` also drops, but
# that is the slip TDL009 reports and fixes at the call.
EVAL_PROOF_DROPOUTS: Dict[str, Tuple[str, int]] = {
    **{
        f"torch.nn.functional.{name}": ("training", 2)
        for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
    },
    **{f"torch.{name}": ("train", 2) for name in ("dropout", "alpha_dropout", "feature_alpha_dropout")},
}
# What builds a tensor on the spot, so that a random fill of it (`torch.cuda.FloatTensor(n).normal_()`)
# is noise drawn where it stands, not the (re)initialisation of a weight a checkpoint may overwrite.
FRESH_TENSOR_FUNCTIONS = frozenset(
    "torch." + name for name in ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "tensor")
)
FRESH_TENSOR_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"})
_TENSOR_CLASS = re.compile(r"torch\.(cuda\.)?[A-Z][A-Za-z]*Tensor")


def eval_proof_dropout(name: Optional[str], call: cst.Call) -> bool:
    """`F.dropout(x, p, training=True)`: a dropout whose mode argument is a literal True."""
    where = EVAL_PROOF_DROPOUTS.get(name or "")
    return where is not None and literal(arg_value(call, *where)) is True


def fresh_tensor(name: Optional[str], attribute: Optional[str]) -> bool:
    """A call that builds a new tensor: `torch.FloatTensor(...)`, `torch.cuda.HalfTensor(...)`,
    `torch.empty(...)`, `x.new_empty(...)` (`name` qualified; `attribute` the method when unresolved)."""
    if name is None:
        return attribute in FRESH_TENSOR_METHODS
    return name in FRESH_TENSOR_FUNCTIONS or _TENSOR_CLASS.fullmatch(name) is not None


# `torch.nn.<Name>` classes that are not modules.
_NOT_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})
_MODULE_BASES = frozenset({"torch.jit.ScriptModule", "lightning.pytorch.LightningModule"})
_MODULE_PACKAGES = ("torch.nn.modules.", "torch.nn.parallel.")


def is_module_base(qualified: Optional[str]) -> bool:
    """Whether a base class's qualified name is `torch.nn.Module` or a torch module class
    (`nn.Sequential`, `nn.Linear`, `DistributedDataParallel`, a `LightningModule`)."""
    if not qualified:
        return False
    if qualified in _MODULE_BASES:
        return True
    package, _, last = qualified.rpartition(".")
    if not last[:1].isupper() or last in _NOT_MODULES:
        return False
    return package == "torch.nn" or qualified.startswith(_MODULE_PACKAGES)


def loads_pretrained_weights(name: Optional[str], call: cst.Call) -> bool:
    """A library builder asked for its pretrained weights (`resnet50(weights="DEFAULT")`,
    `timm.create_model(name, pretrained=True)`): it loads them over every initial weight."""
    return bool(name) and any(b.builds(name) and b.loads_every_weight(call) for b in facts().pretrained_builders)


def draws_when_applied(name: Optional[str]) -> bool:
    """A random object whose construction draws nothing yet (MONAI's `Rand*` transforms, seeded by
    the loader that applies them): a seed after it is not late (TDL004)."""
    if not name:
        return False
    module, _, last = name.rpartition(".")
    return any(classes.when_applied and classes.matches(module, last) for classes in facts().random_classes)


@lru_cache(maxsize=1)
def seeding_methods() -> FrozenSet[str]:
    """The methods by which random objects seed themselves (`set_random_state` for MONAI's `Rand*`
    transforms): a construction such a method is called on draws nothing from the global generators."""
    return frozenset(classes.seeded_by for classes in facts().random_classes if classes.seeded_by)


def builds_from_module_dict(name: Optional[str]) -> bool:
    """`models.__dict__[args.arch](...)`: a builder looked up by name in a module of random
    builders (the subscripted object is `name`)."""
    return (
        bool(name) and name.endswith(".__dict__") and any(name[: -len("__dict__")] == prefix for prefix in facts().torch_prefixes)
    )


GENERATOR_POSITION = {
    "torch.utils.data.random_split": 2,
    "torch.utils.data.RandomSampler": 3,
    "torch.utils.data.SubsetRandomSampler": 1,
    "torch.utils.data.WeightedRandomSampler": 3,
    "torch.utils.data.DataLoader": None,
}
RANDOM_SAMPLERS = frozenset(
    {"torch.utils.data.RandomSampler", "torch.utils.data.SubsetRandomSampler", "torch.utils.data.WeightedRandomSampler"}
)
DATALOADER = "torch.utils.data.DataLoader"
# A project's own DataLoader subclass with an `__init__` of its own (`loader_name`): read as a
# DataLoader through its keyword arguments only.
LOADER_SUBCLASS = "torch.utils.data.DataLoader.<subclass>"
# The LightningModule / LightningDataModule hooks whose loaders the Trainer runs, and the
# Trainer methods that take loaders: Lightning gives those loaders a worker_init_fn after
# `seed_everything(workers=True)` (lightning/pytorch/trainer/connectors/data_connector.py).
LIGHTNING_LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})
TRAINER_METHODS = frozenset({"fit", "validate", "test", "predict"})
# What makes a run train (run a backward pass): a call of one of these, `.backward(...)` on
# anything (a loss, `accelerator.backward(loss)`, `fabric.backward(loss)`), or a library loop that
# trains the model handed to it: class -> its methods that train (read from each library's source:
# Lightning's `Trainer.fit`, the Transformers `Trainer.train` and the TRL trainers built on it).
TRAINING_CALLS = frozenset({"torch.autograd.backward", "torch.autograd.grad"})
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
# Methods of `torch.distributions` objects that draw from torch's generator (a policy's action).
DISTRIBUTION_SAMPLES = frozenset({"sample", "rsample", "sample_n"})
# What shows a run trains although its backward sits where the analysis cannot follow (a loss
# scaler object handed to the loop, the loop of a trainer built from configuration): zeroing
# gradients, putting a model in training mode (`model.train()`, also `trainer.train()`),
# building an optimizer or a gradient scaler.
TRAINING_METHODS = frozenset({"zero_grad"})
GRADIENT_SCALERS = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"})


# Library calls that load a checkpoint into the modules of a dict (`{"net": net}`): (keyword and
# position of that dict, keyword and position of `strict`). Strict by default: every parameter
# and persistent buffer of each module is overwritten, as by `module.load_state_dict(state)`.
# MONAI's `CheckpointLoader(load_path, load_dict, name, map_location, strict, ...)` (1.0 to 1.5,
# monai/handlers/checkpoint_loader.py) loads when the engine it is attached to starts, through
# ignite's `Checkpoint.load_objects(to_load, checkpoint, **kwargs)` (ignite/handlers/checkpoint.py,
# `strict` read from the keywords, default True).
DICT_WEIGHT_LOADERS: Dict[str, Tuple[Tuple[str, int], Tuple[str, Optional[int]]]] = {
    **{
        name: (("load_dict", 1), ("strict", 4))
        for name in ("monai.handlers.CheckpointLoader", "monai.handlers.checkpoint_loader.CheckpointLoader")
    },
    **{
        name: (("to_load", 0), ("strict", None))
        for name in ("ignite.handlers.Checkpoint.load_objects", "ignite.handlers.checkpoint.Checkpoint.load_objects")
    },
}


def builds_optimizer(qualified: Optional[str]) -> bool:
    """`torch.optim.AdamW(...)` and the other optimizer classes (not the LR schedulers)."""
    if not qualified or not qualified.startswith("torch.optim.") or "lr_scheduler" in qualified or "swa_utils" in qualified:
        return False
    return qualified.rsplit(".", 1)[-1][:1].isupper()


TRAINING_LOOPS = {
    "lightning.pytorch.Trainer": frozenset({"fit"}),
    "lightning.pytorch.cli.LightningCLI": frozenset({"fit"}),
    "transformers.Trainer": frozenset({"train"}),
    "transformers.Seq2SeqTrainer": frozenset({"train"}),
    "trl.SFTTrainer": frozenset({"train"}),
    "trl.DPOTrainer": frozenset({"train"}),
    "trl.RewardTrainer": frozenset({"train"}),
    "trl.GRPOTrainer": frozenset({"train"}),
    # mmcv's runners (mmdetection 2.x, mmrotate): `runner.run(data_loaders, workflow)` trains.
    "mmcv.runner.build_runner": frozenset({"run", "train"}),
    "mmcv.runner.EpochBasedRunner": frozenset({"run", "train"}),
    "mmcv.runner.IterBasedRunner": frozenset({"run", "train"}),
    "mmengine.runner.Runner": frozenset({"train"}),
    "mmengine.runner.Runner.from_cfg": frozenset({"train"}),
}
# Calls that may put the run's work on an accelerator without naming CUDA (the device comes from
# configuration, or the library picks it): a run that reaches none of these and no CUDA work
# stays on the CPU.
DEVICE_CALLS = frozenset(
    {
        "torch.set_default_device",
        "torch.set_default_tensor_type",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.DataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.init_process_group",
        "accelerate.Accelerator",
        "lightning.fabric.Fabric",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.cli.LightningCLI",
        "transformers.Trainer",
        "transformers.Seq2SeqTrainer",
        "transformers.pipeline",
    }
)
DEVICE_KEYWORDS = frozenset({"device", "device_map", "device_ids", "map_location"})
# Libraries with devices of their own, whose kernels are not torch's: a `device="cuda"` handed to
# them is no torch CUDA work (CTranslate2's translators in an OpenNMT export, an ONNX session).
NON_TORCH_LIBRARIES = frozenset(
    {
        "ctranslate2",
        "onnxruntime",
        "tensorflow",
        "jax",
        "jaxlib",
        "tensorrt",
        "openvino",
        "faiss",
        "cupy",
        "numba",
        "sklearn",
        "xgboost",
        "lightgbm",
        "catboost",
        "paddle",
        "mxnet",
        "tritonclient",
    }
)


def torch_device_call(qualified: Optional[str]) -> bool:
    """Whether a call's `device=` can put torch work on a device (not another library's)."""
    return qualified is None or qualified.split(".", 1)[0] not in NON_TORCH_LIBRARIES


# `LightningCLI(...)` runs `fit` itself unless `run=False` (its default subcommand with `run=True`).
LIGHTNING_CLI = "lightning.pytorch.cli.LightningCLI"
# What `seed_everything(workers=True)` covers in the seeding facts (rules/seed_helpers.toml).
SEEDS_TRAINER_WORKERS = "trainer-workers"
# The calls the TDL1xx rules look at: what "the entry point loads data" means in the report.
DATA_LOADING = frozenset({DATALOADER, "torch.utils.data.random_split", "torch.utils.data.DistributedSampler"}) | RANDOM_SAMPLERS


def reexported_torch(context: Any, qualified: Optional[str], candidates) -> Optional[str]:
    """The torch name among `candidates` that a first-party name may stand for: one with the same
    last name (`pkg.sampler.SubsetRandomSampler` for `torch.utils.data.SubsetRandomSampler`), as
    a module of the project that imports it re-exports it. Only the project phase can tell
    (`Project.external_name`): a finding that relies on it leaves the pair for its rule's `refine` to decide."""
    if not qualified or qualified.split(".", 1)[0] not in context.first_party:
        return None
    if qualified in candidates or is_dataloader(qualified):
        return None  # a class the catalog knows by this very name (PyG's loader, linted in PyG itself)
    last = qualified.rsplit(".", 1)[-1]
    return next((name for name in sorted(candidates) if name.rsplit(".", 1)[-1] == last), None)


def _has_generator(call: cst.Call, name: str, context: Any = None) -> bool:
    position = GENERATOR_POSITION.get(name)
    value = arg_value(call, "generator", position)
    if value is None:
        return opaque_keywords(call)
    return generator_given(context, call, position) if context is not None else literal(value) is not None


@lru_cache(maxsize=1)
def dataloader_classes() -> Dict[str, bool]:
    """DataLoader and the third-party subclasses the catalog lists (PyG, DGL):
    qualified name -> whether DataLoader's positional
    parameters are theirs too (otherwise only keyword arguments are read)."""
    from torchdet_lint.core.catalog import load_catalog  # the catalog is data of the same layer

    classes = {DATALOADER: True, LOADER_SUBCLASS: False}
    for library in load_catalog().libraries:
        classes.update(dict.fromkeys(library.loaders_positional, True))
        classes.update(dict.fromkeys(library.loaders, False))
    return classes


@lru_cache(maxsize=1)
def own_worker_init_loaders() -> FrozenSet[str]:
    """The DataLoader subclasses that install a `worker_init_fn` of their own when none is given
    (MONAI's loaders: `monai.data.utils.worker_init_fn` reseeds the dataset's random transforms)."""
    from torchdet_lint.core.catalog import load_catalog

    return frozenset(name for library in load_catalog().libraries for name in library.own_worker_init)


def is_dataloader(name: Optional[str]) -> bool:
    return name is not None and name in dataloader_classes()


def loader_name(context: Any, call: cst.Call) -> Optional[str]:
    """The qualified name of a call, as `context.call_name`, except that a call of a DataLoader
    subclass defined in this file (`class InfiniteDataLoader(DataLoader)`), or of a local name
    bound to one or to a DataLoader (`loader = DataLoader if w else InfiniteDataLoader`), is
    named as a DataLoader: its base's name when the subclass keeps DataLoader's `__init__`,
    else `LOADER_SUBCLASS` (whose positional parameters are not read)."""
    qualified = context.call_name(call)
    if qualified is not None or type(call.func) is not cst.Name:
        return qualified
    return _named_loader(context, call.func, 0)


def _named_loader(context: Any, node: cst.BaseExpression, depth: int) -> Optional[str]:
    kind = type(node)
    if depth > 3:
        return None
    if kind is cst.IfExp:
        found = [_named_loader(context, branch, depth + 1) for branch in (node.body, node.orelse)]
        loaders = [name for name in found if name is not None]
        return (loaders[0] if len(set(found)) == 1 else LOADER_SUBCLASS) if loaders else None
    if kind is not cst.Name:
        return None
    qualified = context.qualified_name(node)
    if qualified is not None:
        return qualified if is_dataloader(qualified) else None
    name = node.value
    classes = context.local_classes()
    if name in classes:
        return _subclass_loader(classes, name, 0)
    for value in context.scopes.values(name)[-2:]:  # `loader = DataLoader if ... else Infinite...`
        if type(value) in (cst.Name, cst.IfExp):
            found = _named_loader(context, value, depth + 1)
            if found is not None:
                return LOADER_SUBCLASS if found != DATALOADER else found
    return None


def _subclass_loader(classes: Dict[str, Tuple[Tuple[str, ...], bool]], name: str, depth: int) -> Optional[str]:
    bases, has_init = classes[name]
    for base in bases:
        found = base if is_dataloader(base) else None
        if found is None and base.startswith(".") and base[1:] in classes and depth < 4:
            found = _subclass_loader(classes, base[1:], depth + 1)
        if found is not None:
            return LOADER_SUBCLASS if has_init else found
    return None


def loader_position(name: Optional[str], position: int) -> Optional[int]:
    """`position` for DataLoader's own parameters, None for a subclass with its own signature."""
    return position if dataloader_classes().get(name or "", True) else None


def loader_shuffles(call: cst.Call, resolve, name: Any = NOT_LITERAL) -> Optional[str]:
    """How a DataLoader call shuffles: "shuffle", "sampler" (an inline random sampler
    without its own generator), or None. `resolve` gives qualified names; `name` is the
    loader's (from `loader_name`) when the caller has it."""
    if name is NOT_LITERAL:
        name = resolve(call)
    shuffle = arg_value(call, "shuffle", loader_position(name, 2))
    if shuffle is not None and literal(shuffle) not in (False, None):
        return "shuffle"
    sampler = arg_value(call, "sampler", loader_position(name, 3))
    if isinstance(sampler, cst.Call):
        name = resolve(sampler)
        if name in RANDOM_SAMPLERS and not _has_generator(sampler, name):
            return "sampler"
    return None


def mentions_cuda(node: Optional[cst.CSTNode]) -> bool:
    """A string literal containing "cuda", also inside a conditional expression or f-string."""
    if node is None:
        return False
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = literal(node)
        return isinstance(value, str) and "cuda" in value
    if isinstance(node, cst.FormattedString):
        return any(isinstance(part, cst.FormattedStringText) and "cuda" in part.value for part in node.parts)
    if isinstance(node, cst.IfExp):
        return mentions_cuda(node.body) or mentions_cuda(node.orelse)
    return False


# Calls that run a function passed to them (`fire.Fire(main)`, `mp.spawn(worker, ...)`):
# their function arguments are followed as calls. Other function arguments (callbacks
# stored in tables, `OpInfo(sample_inputs_func=...)`) are not: nothing says they run.
RUNNERS = frozenset(
    {
        "fire.Fire",
        "typer.run",
        "absl.app.run",
        "jsonargparse.CLI",
        "jsonargparse.auto_cli",
        "functools.partial",
        "builtins.map",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "multiprocessing.Process",
        "threading.Thread",
        "torch.distributed.elastic.multiprocessing.start_processes",
        "accelerate.notebook_launcher",
        "hydra.main",
        "submitit.AutoExecutor.submit",
    }
)
# Command-line launchers that run one of the functions of a dict or list handed to them
# (`fire.Fire({"train": train})`, litgpt's `CLI(PARSER_DATA)`): each first-party member is reached.
COMMAND_RUNNERS = frozenset({"fire.Fire", "jsonargparse.CLI", "jsonargparse.auto_cli"})
RUNNER_METHODS = frozenset(
    {"submit", "map", "imap", "imap_unordered", "starmap", "apply_async", "run_in_executor", "launch", "spawn"}
)
# Calls that only store the functions handed to them.
CONTAINERS = frozenset(
    {
        "builtins.dict",
        "builtins.list",
        "builtins.tuple",
        "builtins.set",
        "builtins.frozenset",
        "collections.OrderedDict",
        "functools.lru_cache",
    }
)
# A lambda runs as part of the enclosing code only when handed to one of these (or a runner);
# elsewhere it is stored for later (`make_prim(..., lambda d: torch.randint(...))`).
LAMBDA_CALLERS = frozenset(
    {"builtins.sorted", "builtins.min", "builtins.max", "builtins.filter", "builtins.map", "builtins.list"}
)
# `torch.cuda.*` calls that are not CUDA work: the contract's exceptions, and queries that
# only read the device's state (library code asks them to pick a code path).
CUDA_NOT_WORK = frozenset(
    {
        "is_available",
        "device_count",
        "get_device_name",
        "manual_seed",
        "manual_seed_all",
        "is_initialized",
        "current_device",
        "get_device_properties",
        "get_device_capability",
        "get_arch_list",
        "is_bf16_supported",
        "is_tf32_supported",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "memory_stats",
        "memory_summary",
        "mem_get_info",
        "utilization",
        "get_rng_state",
        "get_rng_state_all",
        # Housekeeping that runs no kernel, so no nondeterministic one.
        "synchronize",
        "empty_cache",
        "reset_peak_memory_stats",
        "reset_max_memory_allocated",
        "reset_max_memory_cached",
        "reset_accumulated_memory_stats",
        "memory_cached",
        "max_memory_cached",
        "ipc_collect",
        # Version queries (`torch.cuda.nccl.version()`).
        "version",
        # Housekeeping: choosing a device, streams and events,
        # and `torch.cuda.device(...)` objects, which run no kernel of the program's.
        "set_device",
        "current_stream",
        "default_stream",
        "set_stream",
        "stream",
        "Stream",
        "ExternalStream",
        "StreamContext",
        "Event",
        "device",
        "device_of",
        "init",
    }
)


def is_cuda_work(qualified: str) -> bool:
    """A `torch.cuda.*` call that does CUDA work (not a query, not private plumbing)."""
    rest = qualified[len("torch.cuda.") :].split(".")
    return rest[-1] not in CUDA_NOT_WORK and not any(part.startswith("_") for part in rest)


# TDL406: convolution layers and calls (torchvision's model builders are CNNs), and the
# settings that choose cuDNN benchmarking explicitly (True or False: a deliberate choice).
CONVOLUTION_RE = re.compile(
    r"^torch\.(?:nn\.(?:Lazy)?Conv(?:Transpose)?[123]d|(?:nn\.functional\.)?conv(?:_transpose)?[123]d)$"
    r"|^torchvision\.models\.(?:[a-z_]+\.)*(?!get_|list_)[a-z][a-z0-9_]*$"
)
BENCHMARK_SETTINGS = frozenset({"lightning.pytorch.Trainer", "torch.backends.cudnn.flags"})


# `pytest.importorskip("x")` at the top of a test module only guards its imports.
_SETUP_CALL_PREFIXES = ("argparse.", "logging.", "warnings.", "sys.path.", "pytest.importorskip")
_SETUP_METHODS = frozenset(
    {
        "add_argument",
        "add_argument_group",
        "add_mutually_exclusive_group",
        "add_subparsers",
        "add_parser",
        "set_defaults",
        "parse_args",
        "parse_known_args",
        "setLevel",
        "addHandler",
        "setFormatter",
        "addFilter",
        "basicConfig",
        "filterwarnings",
        "simplefilter",
    }
)


def is_setup_call(qualified: Optional[str], dotted: Optional[str]) -> bool:
    """Argument parsing, logging and warnings set-up (and `sys.path` edits, `__all__` building):
    module-level calls that do not make a file a script."""
    if qualified and qualified.startswith(_SETUP_CALL_PREFIXES):
        return True
    if dotted:
        last = dotted.rsplit(".", 1)[-1]
        if last in _SETUP_METHODS or dotted.startswith("__all__."):
            return True
    return False


def entry_configured(settings, path: str) -> bool:
    patterns = getattr(settings, "entry_points", ())
    if not patterns:
        return False
    candidates = {path, Path(path).name}
    try:
        candidates.add(Path(path).resolve().relative_to(settings.root).as_posix())
    except (ValueError, OSError):
        pass
    return any(fnmatch.fnmatch(c, pattern) for c in candidates for pattern in patterns)
