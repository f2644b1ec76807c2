"""Argument checks: PyTorch's rules, messages that name the arguments."""

from __future__ import annotations

import multiprocessing

import pytest

from dataloader_api import DataLoader, IterableDataset, RandomSampler, SequentialSampler


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(5))


DATA = list(range(10))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"num_workers": -1}, ValueError, "num_workers option should be non-negative"),
        ({"num_workers": 1.5}, ValueError, "num_workers"),
        ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
        ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified"),
        ({"num_workers": 1, "prefetch_factor": 0}, ValueError, "prefetch_factor option should be"),
        (
            {"persistent_workers": True},
            ValueError,
            "persistent_workers option needs num_workers > 0",
        ),
        (
            {"sampler": SequentialSampler(DATA), "shuffle": True},
            ValueError,
            "sampler option is mutually exclusive with shuffle",
        ),
        (
            {"batch_sampler": [[0, 1]], "batch_size": 2},
            ValueError,
            "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
            "and drop_last",
        ),
        ({"batch_sampler": [[0, 1]], "drop_last": True}, ValueError, "mutually exclusive"),
        ({"batch_sampler": [[0, 1]], "shuffle": True}, ValueError, "mutually exclusive"),
        (
            {"batch_size": None, "drop_last": True},
            ValueError,
            "batch_size=None option disables auto-batching and is mutually exclusive "
            "with drop_last",
        ),
        ({"batch_size": 0}, ValueError, "batch_size should be a positive integer value"),
        ({"batch_size": True}, ValueError, "batch_size should be a positive integer value"),
        ({"drop_last": 1}, ValueError, "drop_last should be a boolean value, but got drop_last=1"),
        ({"batch_size": "8"}, ValueError, "but got batch_size='8'"),
        ({"timeout": 1}, ValueError, "timeout=1 needs worker threads (num_workers > 0)"),
        (
            {"multiprocessing_context": "spawn"},
            ValueError,
            "multiprocessing_context can only be used with worker threads",
        ),
        (
            {"num_workers": 1, "multiprocessing_context": "thread"},
            ValueError,
            "multiprocessing_context option should specify a valid start method",
        ),
        ({"num_workers": 1, "multiprocessing_context": 3}, TypeError, "multiprocessing_context"),
        ({"collate_fn": 3}, TypeError, "collate_fn should be callable"),
        ({"worker_init_fn": "f"}, TypeError, "worker_init_fn should be callable"),
        ({"pin_memory_device": "cuda"}, ValueError, "only applies with pin_memory=True"),
        ({"seed": 1, "generator": RandomSampler(DATA)}, ValueError, "mutually exclusive"),
        ({"seed": "1"}, TypeError, "seed should be an int"),
        ({"generator": object()}, TypeError, "generator should be a torch.Generator"),
        ({"backend": 3}, TypeError, "backend should be a str"),
        ({"backend": "no-such-backend"}, ValueError, "installed backends:"),
        ({"items_in_parallel": 0}, ValueError, "items_in_parallel option should be a positive"),
        ({"items_in_parallel": True}, ValueError, "items_in_parallel option should be a positive"),
        ({"items_in_parallel": 2}, ValueError, "items_in_parallel=2 needs worker threads"),
        (
            {"items_in_parallel": 2, "num_workers": 1, "batch_size": None},
            ValueError,
            "needs a map-style dataset and batch_size",
        ),
        (
            {"items_in_parallel": 2, "num_workers": 1, "backend": "threads"},
            ValueError,
            "not supported by backend 'threads'",
        ),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        DataLoader(DATA, **kwargs)


def test_items_in_parallel_rejects_iterable_and_getitems_datasets():
    with pytest.raises(ValueError, match="needs a map-style dataset"):
        DataLoader(Stream(), batch_size=2, num_workers=1, items_in_parallel=2)

    class Batched:
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return index

        def __getitems__(self, indices):
            return list(indices)

    with pytest.raises(ValueError, match="defines __getitems__"):
        DataLoader(Batched(), batch_size=2, num_workers=1, items_in_parallel=2)


@pytest.mark.parametrize("name", ["shuffle", "sampler", "batch_sampler"])
def test_iterable_dataset_rejects_sampling_options(name):
    value = {"shuffle": True, "sampler": [0], "batch_sampler": [[0]]}[name]
    with pytest.raises(ValueError, match=f"expected unspecified {name} option"):
        DataLoader(Stream(), **{name: value})


def test_object_without_getitem_or_iter_is_rejected():
    with pytest.raises(TypeError, match=r"map-style .* or iterable"):
        DataLoader(42)


def test_multiprocessing_context_is_accepted_with_workers():
    loader = DataLoader(DATA, num_workers=1, multiprocessing_context="spawn")
    assert [b.tolist() for b in loader] == [[i] for i in DATA]
    loader = DataLoader(
        DATA, num_workers=1, multiprocessing_context=multiprocessing.get_context("spawn")
    )
    assert len(list(loader)) == 10


def test_pin_memory_without_accelerator_warns_instead_of_ignoring():
    loader = DataLoader(DATA, batch_size=5, pin_memory=True)
    with pytest.warns(UserWarning, match="not pinned"):
        batches = list(loader)
    assert [b.tolist() for b in batches] == [DATA[:5], DATA[5:]]


@pytest.mark.parametrize(
    ("kwargs", "length"),
    [
        ({}, 10),
        ({"batch_size": 3}, 4),
        ({"batch_size": 3, "drop_last": True}, 3),
        ({"batch_size": None}, 10),
        ({"batch_sampler": [[0, 1], [2]]}, 2),
        ({"sampler": RandomSampler(DATA, replacement=True, num_samples=7), "batch_size": 2}, 4),
    ],
)
def test_len_matches_torch(kwargs, length):
    assert len(DataLoader(DATA, **kwargs)) == length


class SizedStream(IterableDataset):
    def __iter__(self):
        return iter(range(10))

    def __len__(self):
        return 10


@pytest.mark.parametrize(
    ("kwargs", "length"),
    [({"batch_size": 3}, 4), ({"batch_size": 3, "drop_last": True}, 3), ({"batch_size": None}, 10)],
)
def test_len_of_iterable_dataset(kwargs, length):
    assert len(DataLoader(SizedStream(), **kwargs)) == length


def test_len_of_unsized_iterable_is_a_type_error():
    with pytest.raises(TypeError):
        len(DataLoader(Stream()))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("batch_size", 4),
        ("batch_sampler", None),
        ("sampler", None),
        ("drop_last", True),
        ("dataset", [1, 2]),
        ("persistent_workers", True),
    ],
)
def test_options_torch_fixes_after_init_raise_value_error(name, value):
    """Setting them used to change len() but not the batches; torch raises ValueError."""
    loader = DataLoader(list(range(10)), batch_size=2)
    with pytest.raises(ValueError, match=f"{name} attribute should not be set after DataLoader"):
        setattr(loader, name, value)
    assert len(loader) == 5
    assert next(iter(loader)).tolist() == [0, 1]


def test_other_options_are_read_only_not_silently_ignored():
    loader = DataLoader(list(range(10)), batch_size=2)
    with pytest.raises(
        AttributeError,
        match=r"num_workers is read-only on a built DataLoader .*build a new DataLoader "
        r"with num_workers=2",
    ):
        loader.num_workers = 2
    assert loader.num_workers == 0


def test_dataloader_is_generic_like_torchs():
    assert DataLoader[int] is not None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shuffle": 1},
        {"shuffle": "yes"},
        {"pin_memory": 0},
        {"num_workers": 1, "persistent_workers": 1},
        {"num_workers": 1, "in_order": 1},
        {"num_workers": 1, "in_order": None},
    ],
)
def test_truthy_flags_are_accepted_as_torch_accepts_them(kwargs):
    loader = DataLoader(DATA, batch_size=5, **kwargs)
    assert sorted(i for b in loader for i in b.tolist()) == DATA
    for name in set(kwargs) - {"num_workers", "shuffle"}:
        assert getattr(loader, name) is bool(kwargs[name])


def test_shuffle_on_a_dataset_without_len_fails_at_construction():
    class NoLen:
        def __getitem__(self, index):
            return index

    with pytest.raises(TypeError, match="shuffle=True needs the dataset's length, but NoLen has"):
        DataLoader(NoLen(), shuffle=True)


def test_datasets_are_generic_like_torchs():
    from dataloader_api import Dataset, IterableDataset

    assert Dataset[int] is not None and IterableDataset[str] is not None


def test_an_invalid_backend_variable_is_an_error_without_workers_too(monkeypatch):
    monkeypatch.setenv("DATALOADER_BACKEND", "rusty")
    for num_workers in (0, 2):
        with pytest.raises(ValueError, match=r"DATALOADER_BACKEND='rusty' is not an installed"):
            DataLoader(list(range(4)), num_workers=num_workers)


def test_the_demo_names_itself_as_it_is_run(capsys):
    from dataloader_api import demo

    with pytest.raises(SystemExit):
        demo.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m dataloader_api.demo")


def test_more_workers_than_cpus_warns_when_built_as_torch_does():
    import os

    cpus = len(os.sched_getaffinity(0))
    with pytest.warns(UserWarning, match="excessive worker creation might get DataLoader running"):
        DataLoader(list(range(4)), num_workers=cpus + 1)


def test_torchs_private_attributes_answer_as_torchs():
    from dataloader_api import IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 5

    batched = DataLoader(list(range(10)), batch_size=3)
    assert batched._auto_collation is True and batched._dataset_kind == 0
    assert list(batched._index_sampler) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    single = DataLoader(list(range(3)), batch_size=None)
    assert single._auto_collation is False and list(single._index_sampler) == [0, 1, 2]
    stream = DataLoader(Stream(), batch_size=2)
    assert stream._dataset_kind == 1 and stream._IterableDataset_len_called is None
    assert len(stream) == 3 and stream._IterableDataset_len_called == 5  # torch's: len(dataset)
    persistent = DataLoader(list(range(4)), num_workers=1, persistent_workers=True)
    assert persistent._iterator is None
    iterator = iter(persistent)
    assert persistent._iterator is iterator
    persistent._iterator = None  # what Lightning's teardown does: the workers end
    assert persistent.join(30) and persistent._iterator is None
    with pytest.raises(AttributeError, match=r"_iterator can only be set to None"):
        persistent._iterator = iterator
    assert [b.tolist() for b in persistent] == [[0], [1], [2], [3]]  # new workers
    persistent.close()


def test_every_argument_is_read_by_exactly_one_concern():
    """``build_options`` takes the arguments by name: each one is read by one
    concern's check (none silently ignored, none checked twice)."""
    import inspect
    from collections import Counter
    from dataclasses import fields

    from dataloader_api._options.loader_options import LoaderArguments, build_options

    names = [n for n in inspect.signature(DataLoader.__init__).parameters if n != "self"]
    reads: Counter[str] = Counter()
    fields_ = {field.name for field in fields(LoaderArguments)}

    class Recorded(LoaderArguments):
        def __getattribute__(self, name):
            if name in fields_:
                reads[name] += 1
            return super().__getattribute__(name)

    defaults = {
        n: p.default
        for n, p in inspect.signature(DataLoader.__init__).parameters.items()
        if n != "self"
    }
    build_options(Recorded(**{**defaults, "dataset": list(range(4))}))
    assert sorted(reads) == sorted(names)
    assert [n for n, count in reads.items() if count > 1] == []


def test_the_arguments_value_lists_the_signature_and_init_passes_each_by_name():
    """``LoaderArguments`` is the one list after the signature: the same names in
    the same order; ``DataLoader.__init__`` passes each one by name (no ``locals()``,
    which hides them from mypy and static tracing)."""
    import ast
    import inspect
    import textwrap
    from dataclasses import fields

    from dataloader_api._options.loader_options import LoaderArguments

    names = [n for n in inspect.signature(DataLoader.__init__).parameters if n != "self"]
    assert [field.name for field in fields(LoaderArguments)] == names
    tree = ast.parse(textwrap.dedent(inspect.getsource(DataLoader.__init__)))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "locals"]
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "LoaderArguments"
    ]
    assert len(calls) == 1 and not calls[0].args
    assert [(k.arg, getattr(k.value, "id", None)) for k in calls[0].keywords] == [
        (n, n) for n in names
    ]
