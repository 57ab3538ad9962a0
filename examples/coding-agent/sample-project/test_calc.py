"""Tests of calc.py: run them with `python3 -m unittest`."""

import unittest

from calc import average, median, total


class CalcTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3, 4]), 10)

    def test_average(self):
        self.assertEqual(average([1, 2, 3, 4]), 2.5)

    def test_median(self):
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
