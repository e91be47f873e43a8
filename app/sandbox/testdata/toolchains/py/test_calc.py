import unittest


def add(a, b):
    return a + b


def test_add():
    assert add(2, 2) == 4


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 1), 2)
