import unittest

import pytest


def add(a, b):
    return a - b  # the bug


def test_add():
    assert add(2, 2) == 4, "two and two"


def test_sub():
    assert 5 - 3 == 2


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n > 0


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


class TestGroup:
    def test_inner(self):
        print("some output")
        assert add(1, 0) == 1


class TestCase(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(1, 1)

    def test_bad(self):
        self.assertEqual(add(1, 1), 2)

    @unittest.skip("later")
    def test_later(self):
        pass
