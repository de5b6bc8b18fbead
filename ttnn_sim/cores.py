"""Core coordinates and core sets: CoreCoord, CoreRange, CoreRangeSet, CoreGrid, num_cores_to_corerangeset.

Same constructors and methods as ttnn 0.81.1's; a CoreRangeSet refuses overlapping ranges, as the real one does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .errors import TTError


class CoreCoord:
    """A core's logical (x, y) on the worker grid; x is the column."""

    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = int(x), int(y)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreCoord) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))

    def __iter__(self) -> Iterator[int]:
        return iter((self.x, self.y))

    def __repr__(self) -> str:
        return f"{self.x}-{self.y}"


class CoreRange:
    """The rectangle of cores from start to end, both inclusive."""

    __slots__ = ("start", "end")

    def __init__(self, start: CoreCoord, end: CoreCoord) -> None:
        if end.x < start.x or end.y < start.y:
            raise TTError("CoreRange", f"invalid core range: end {end} is before start {start}")
        self.start, self.end = start, end

    def grid_size(self) -> CoreCoord:
        return CoreCoord(self.end.x - self.start.x + 1, self.end.y - self.start.y + 1)

    def num_cores(self) -> int:
        g = self.grid_size()
        return g.x * g.y

    def contains(self, other: CoreCoord | CoreRange) -> bool:
        if isinstance(other, CoreRange):
            return self.contains(other.start) and self.contains(other.end)
        return self.start.x <= other.x <= self.end.x and self.start.y <= other.y <= self.end.y

    def cores(self, row_major: bool = True) -> list[CoreCoord]:
        xs, ys = range(self.start.x, self.end.x + 1), range(self.start.y, self.end.y + 1)
        if row_major:
            return [CoreCoord(x, y) for y in ys for x in xs]
        return [CoreCoord(x, y) for x in xs for y in ys]

    def _overlaps(self, other: CoreRange) -> bool:
        return not (other.start.x > self.end.x or other.end.x < self.start.x or other.start.y > self.end.y
                    or other.end.y < self.start.y)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreRange) and (self.start, self.end) == (other.start, other.end)

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __repr__(self) -> str:
        return f"[{self.start!r} - {self.end!r}]"


class CoreRangeSet:
    """A set of non-overlapping core ranges (built from CoreRanges, or CoreCoords taken as one-core ranges)."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[CoreRange | CoreCoord] | CoreRange = ()) -> None:
        if isinstance(ranges, CoreRange):
            ranges = [ranges]
        items = [r if isinstance(r, CoreRange) else CoreRange(r, r) for r in ranges]
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                if a._overlaps(b):
                    raise TTError("CoreRangeSet", f"core ranges {a!r} and {b!r} overlap")
        self._ranges = tuple(sorted(set(items), key=lambda r: (r.start.y, r.start.x, r.end.y, r.end.x)))

    def ranges(self) -> list[CoreRange]:
        return list(self._ranges)

    def num_cores(self) -> int:
        return sum(r.num_cores() for r in self._ranges)

    def size(self) -> int:
        return len(self._ranges)

    def empty(self) -> bool:
        return not self._ranges

    def bounding_box(self) -> CoreRange:
        if not self._ranges:
            raise TTError("CoreRangeSet", "the bounding box of an empty core range set is undefined")
        return CoreRange(CoreCoord(min(r.start.x for r in self._ranges), min(r.start.y for r in self._ranges)),
                         CoreCoord(max(r.end.x for r in self._ranges), max(r.end.y for r in self._ranges)))

    def contains(self, other: CoreCoord | CoreRange | CoreRangeSet) -> bool:
        if isinstance(other, CoreRangeSet):
            return all(self.contains(c) for c in other.cores())
        if isinstance(other, CoreRange):
            return all(self.contains(c) for c in other.cores())
        return any(r.contains(other) for r in self._ranges)

    def merge(self, other: CoreRangeSet | Iterable[CoreRange]) -> CoreRangeSet:
        extra = other.ranges() if isinstance(other, CoreRangeSet) else list(other)
        return from_cores({c for r in (*self._ranges, *extra) for c in r.cores()})

    def subtract(self, other: CoreRangeSet) -> CoreRangeSet:
        drop = set(other.cores())
        return from_cores(c for c in self.cores() if c not in drop)

    def cores(self, row_major: bool = True) -> list[CoreCoord]:
        """Every core, range by range (in each range row by row, or column by column)."""
        return [c for r in self._ranges for c in r.cores(row_major)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreRangeSet) and set(self.cores()) == set(other.cores())

    def __hash__(self) -> int:
        return hash(frozenset(self.cores()))

    def __repr__(self) -> str:
        return "{" + ", ".join(map(repr, self._ranges)) + "}"


class CoreGrid:
    """A grid of x by y cores starting at (0, 0): ttnn.CoreGrid(x=8, y=4)."""

    __slots__ = ("x", "y")

    def __init__(self, *, x: int, y: int) -> None:
        self.x, self.y = int(x), int(y)

    @property
    def num_cores(self) -> int:
        return self.x * self.y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CoreGrid) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))

    def __repr__(self) -> str:
        return f"ttnn.CoreGrid(x={self.x}, y={self.y})"


def from_cores(cores: Iterable[CoreCoord]) -> CoreRangeSet:
    """The cores as few rectangles: runs along each row, stacked where consecutive rows have the same run."""
    by_row: dict[int, list[int]] = {}
    for c in set(cores):
        by_row.setdefault(c.y, []).append(c.x)
    open_runs: dict[tuple[int, int], list[int]] = {}  # (x0, x1) -> [y0, y1] of a rectangle still growing
    done: list[CoreRange] = []
    for y in sorted(by_row):
        xs = sorted(by_row[y])
        runs, start = [], xs[0]
        for a, b in zip(xs, xs[1:] + [None], strict=True):
            if b != a + 1:
                runs.append((start, a))
                start = b
        grown = {}
        for run in runs:
            ys = open_runs.pop(run, None)
            grown[run] = [ys[0], y] if ys is not None and ys[1] == y - 1 else [y, y]
            if ys is not None and ys[1] != y - 1:
                done.append(CoreRange(CoreCoord(run[0], ys[0]), CoreCoord(run[1], ys[1])))
        done += [CoreRange(CoreCoord(r[0], ys[0]), CoreCoord(r[1], ys[1])) for r, ys in open_runs.items()]
        open_runs = grown
    done += [CoreRange(CoreCoord(r[0], ys[0]), CoreCoord(r[1], ys[1])) for r, ys in open_runs.items()]
    return CoreRangeSet(done)


def grid_range_set(grid: CoreGrid) -> CoreRangeSet:
    return CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(grid.x - 1, grid.y - 1))])


def num_cores_to_corerangeset(target_num_cores: int, grid_size: CoreCoord, row_wise: bool = False) -> CoreRangeSet:
    """The first target_num_cores cores of a grid_size grid, filled row by row (row_wise) or column by column,
    as full rows/columns plus one partial one."""
    cols, rows = grid_size.x, grid_size.y
    if target_num_cores > cols * rows:
        raise TTError("num_cores_to_corerangeset", f"Target number of cores {target_num_cores} is greater than "
                                                   f"total number of available cores {cols * rows}")
    ranges = []
    if row_wise:
        full, rest = divmod(target_num_cores, cols)
        if full:
            ranges.append(CoreRange(CoreCoord(0, 0), CoreCoord(cols - 1, full - 1)))
        if rest:
            ranges.append(CoreRange(CoreCoord(0, full), CoreCoord(rest - 1, full)))
    else:
        full, rest = divmod(target_num_cores, rows)
        if full:
            ranges.append(CoreRange(CoreCoord(0, 0), CoreCoord(full - 1, rows - 1)))
        if rest:
            ranges.append(CoreRange(CoreCoord(full, 0), CoreCoord(full, rest - 1)))
    return CoreRangeSet(ranges)


def num_cores_to_corerangeset_in_subcoregrids(start_core: CoreCoord, target_num_cores: int,
                                              sub_core_grids: CoreRangeSet, row_wise: bool = False) -> CoreRangeSet:
    """target_num_cores cores of sub_core_grids, taken in order from start_core on."""
    order = sub_core_grids.cores(row_major=row_wise)
    if start_core not in order:
        raise TTError("num_cores_to_corerangeset_in_subcoregrids", f"start core {start_core} is not in the grids")
    picked = order[order.index(start_core) : order.index(start_core) + target_num_cores]
    if len(picked) < target_num_cores:
        raise TTError("num_cores_to_corerangeset_in_subcoregrids",
                      f"{target_num_cores} cores requested, {len(picked)} available from {start_core}")
    return from_cores(picked)


def as_range_set(grid: Any) -> CoreRangeSet:
    if isinstance(grid, CoreRangeSet):
        return grid
    if isinstance(grid, CoreGrid):
        return grid_range_set(grid)
    if isinstance(grid, CoreRange):
        return CoreRangeSet([grid])
    raise TTError("ShardSpec", f"grid must be a CoreRangeSet, got {type(grid).__name__}")
