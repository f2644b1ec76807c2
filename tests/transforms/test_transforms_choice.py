"""``RandomChoice`` and ``RandomOrder``, ops over ops as torchvision v2's: their
arguments and defaults (``p`` divided by its sum), one draw per item picking
the op by its running sum of weights, a Fisher-Yates order of the ops, each op
giving back the kind it takes, and their records read back. That every backend
and the native pipeline give the reference's pixels is in
``test_transforms_apply.py``'s pipelines."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from dataloader_api import transforms as T


def noise(height: int, width: int, channels: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


def test_torchvisions_defaults_and_p_divided_by_its_sum():
    flips = [T.HFlip(), T.VFlip(), T.Rotate90()]
    assert T.RandomChoice(flips).p == (1 / 3, 1 / 3, 1 / 3)
    assert T.RandomChoice(flips, p=[2, 0, 6]).p == (0.25, 0.0, 0.75)
    assert T.RandomOrder(flips).transforms == tuple(flips)
    for op in (T.RandomChoice(flips, p=[1, 2, 1]), T.RandomOrder(flips)):
        assert T.op_from_dict(op.to_dict()) == op
        assert T.Compose.from_dict(T.Compose([op]).to_dict()) == T.Compose([op])


@pytest.mark.parametrize(
    "build, error, words",
    [
        (lambda: T.RandomChoice([]), ValueError, "RandomChoice: transforms should hold at least one op, but got []"),  # noqa: E501
        (lambda: T.RandomChoice(T.HFlip()), TypeError, "RandomChoice: transforms should be a list of dataloader_api.transforms ops, but got transforms=HFlip()"),  # noqa: E501
        (lambda: T.RandomOrder([abs]), TypeError, "RandomOrder: transforms should be a list of dataloader_api.transforms ops, but got transforms=[<built-in function abs>]"),  # noqa: E501
        (lambda: T.RandomChoice([T.HFlip()], p=0.5), TypeError, "RandomChoice: p should be None or a list of 1 weights, but got p=0.5"),  # noqa: E501
        (lambda: T.RandomChoice([T.HFlip()], p=[1, 2]), ValueError, "p should hold 1 weights (one per op), none below 0 and not all 0, but got p=[1, 2]"),  # noqa: E501
        (lambda: T.RandomChoice([T.HFlip(), T.VFlip()], p=[1, -1]), ValueError, "but got p=[1, -1]"),  # noqa: E501
        (lambda: T.RandomChoice([T.HFlip(), T.VFlip()], p=[0, 0]), ValueError, "but got p=[0, 0]"),
        (lambda: T.RandomChoice([T.HFlip()], p=["x"]), ValueError, "RandomChoice: p should be a finite number, but got p='x'"),  # noqa: E501
    ],
)  # fmt: skip
def test_bad_arguments_are_named_with_their_value(build, error, words):
    with pytest.raises(error) as raised:
        build()
    assert words in str(raised.value)


def test_each_op_must_give_back_the_kind_it_takes():
    with pytest.raises(
        TypeError, match=r"RandomChoice.*uint8 HWC, but its transforms give float32"
    ):
        T.Compose([T.RandomChoice([T.HFlip(), T.ToFloat()])])
    with pytest.raises(TypeError, match=r"RandomOrder.*uint8 HWC, but its transforms give float32"):
        T.Compose([T.RandomOrder([T.ToFloat(), T.Normalize(0.5, 0.2)])])
    with pytest.raises(TypeError, match=r"RandomOrder: transforms\[1\]: .*put it before ToFloat"):
        T.Compose([T.ToFloat(), T.RandomOrder([T.HFlip(), T.RandomSolarize(3)])])
    with pytest.raises(TypeError, match="put Decode"):
        T.Compose([T.RandomChoice([T.HFlip()]), T.Decode()], start="encoded")


def test_choice_draws_one_op_per_item_by_its_weight():
    image = noise(6, 7, 3)
    ops = [T.HFlip(), T.VFlip(), T.RandomSolarize(0, p=1), T.Rotate90()]
    outcomes = [np.asarray(T.Compose([op])(image)) for op in ops]
    pipeline = T.Compose([T.RandomChoice(ops, p=[1, 0, 2, 1])])
    chosen = Counter()
    for index in range(800):
        u = T.ItemRandom(4, index).uniform()
        expected = 0 if u < 0.25 else 2 if u < 0.75 else 3  # the running sums of p
        got = pipeline(image, index=index, epoch_seed=4)
        np.testing.assert_array_equal(got, outcomes[expected])
        chosen[expected] += 1
    assert chosen[1] == 0  # a weight of 0 is never drawn
    assert 150 <= chosen[0] <= 250 and 340 <= chosen[2] <= 460 and 150 <= chosen[3] <= 250


def test_order_runs_every_op_once_in_a_fisher_yates_order_then_their_draws():
    image = noise(5, 8, 1)
    ops = [T.RandomSolarize(100, p=1), T.RandomPosterize(2, p=1), T.RandomApply([T.HFlip()])]
    pipeline = T.Compose([T.RandomOrder(ops)])
    orders = Counter()
    for index in range(600):
        random = T.ItemRandom(9, index)
        order = [0, 1, 2]
        for last in (2, 1):  # from the last position down, swapped with one at or below it
            other = random.below(last + 1)
            order[last], order[other] = order[other], order[last]
        expected = image
        for position in order:  # the ops' own draws follow the order's
            applies = random.uniform() < (0.5 if position == 2 else 1.0)  # each op's p
            if position == 2:
                expected = expected[:, ::-1] if applies else expected
            else:
                expected = T.Compose([ops[position]])(expected)  # p=1: always
        np.testing.assert_array_equal(pipeline(image, index=index, epoch_seed=9), expected)
        orders[tuple(order)] += 1
    assert set(orders) == set(itertools.permutations(range(3)))  # each of the 6 drawn
    assert min(orders.values()) >= 60
