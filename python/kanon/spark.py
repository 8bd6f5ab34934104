"""``kanon.spark``: kanon's local recodings on a Spark DataFrame (extra ``duckdb-kanon[spark]``).

The driver cuts a sample of the quasi-identifiers Mondrian-style (the QI of widest
normalized rank range, at its median, until a part holds about ``partition_rows`` rows);
Spark gives every row the id of its part with one expression, counts the parts exactly,
and merges each part below k rows with its neighbours in the cuts' order; then each
part is anonymized by kanon itself (an in-process DuckDB and the same kernels) in
``groupBy(part).applyInArrow``. Every part holds ≥ k rows and every released group of a
part ≥ k, so every combination of released labels holds ≥ k rows in the union (equal
labels from two parts only make a class larger). Only DataFrame calls (and Spark SQL
over temporary views, for ``"optimal"``) are used, so it works under Spark Connect too.

Default hierarchies are built by each part from its own rows (a part's intervals may
differ from another's); pass ``hierarchies`` to release labels of one hierarchy.

``method="optimal"`` instead searches the histogram of QI values on the driver and
applies the transformation in Spark SQL (:func:`_optimal`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.plan.catalog import RESERVED_PREFIX
from kanon.plan.release.registry import LOCAL_METHODS
from kanon.sql.quote import ident

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    import duckdb
    from pyspark.sql import Column, DataFrame

    from kanon.api.check import CheckReport

__all__ = ["LOCAL_METHODS", "PARTITION_ROWS", "anonymize", "check"]

#: Rows of the sample the cuts are computed from (at most).
SAMPLE_ROWS = 100_000
#: The default rows per part. At 10M census rows and the DuckDB path's effort ('fast'),
#: the forest's GCP is 11 % above the DuckDB path's with parts of 200,000 rows, 7.5 %
#: with parts of 1,000,000 (benches/README.md, issue 22).
PARTITION_ROWS = 1_000_000


@dataclass(frozen=True)
class _Cut:
    """A node of the cut tree: rows with ``column`` NULL or ≤ ``value`` go left."""

    column: str
    value: Any
    left: _Cut | int
    right: _Cut | int


def _spark() -> Any:
    try:
        from pyspark.sql import functions
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        msg = "kanon.spark needs PySpark >= 4.0: pip install 'duckdb-kanon[spark]'"
        raise ImportError(msg) from exc
    return functions


def anonymize(
    sdf: DataFrame,
    k: int,
    qi: list[str],
    *,
    method: str = "forest",
    hierarchies: Mapping[str, Any] | None = None,
    identifiers: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    insensitive: Iterable[str] = (),
    partition_rows: int = PARTITION_ROWS,
    seed: int = 0,
    **options: Any,
) -> DataFrame:
    """Return a k-anonymous release of Spark DataFrame ``sdf`` (as ``kanon.anonymize``).

    Args:
        sdf: the table.
        k: the smallest class size (1 ≤ k ≤ rows).
        qi: the quasi-identifier columns.
        method: one of :data:`LOCAL_METHODS`, or ``"optimal"``.
        hierarchies: per QI a hierarchy (a Spark DataFrame or a pyarrow Table: leaf in
            column 0, one column per level above; collected to the driver); QIs left
            out get kanon's default hierarchies, per part.
        identifiers: direct identifiers (released as ``'*'``).
        sensitive: sensitive columns (released unchanged).
        insensitive: other columns released unchanged. Every column needs a role.
        partition_rows: about how many rows each part holds (the unit of work; a part
            of 1,000,000 census rows peaks near 2 GB in its Python worker).
        seed: the forest's seed, and the sample's.
        **options: further options of ``kanon(...)`` (``labels``, ``priorities``,
            ``effort``, ``l``, ...), applied in every part.

    Returns:
        A DataFrame of the same columns: QIs and identifiers as strings (the labels,
        identifiers ``'*'``), the others unchanged.

    Raises:
        InvalidInputError: a bad ``k``, ``method`` or ``partition_rows``, fewer than k
            rows.
        ConfigError: unknown columns, a column without a role, a hierarchy that is not
            a table.
    """
    f = _spark()
    columns = list(sdf.columns)
    roles = _roles(columns, qi, identifiers, sensitive, insensitive)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"k must be a whole number >= 1, got {k!r}"
        raise InvalidInputError(msg)
    if method not in (*LOCAL_METHODS, "optimal"):
        msg = (
            f"kanon.spark.anonymize runs the local methods {', '.join(map(repr, LOCAL_METHODS))}"
            f" and 'optimal', got method {method!r}"
        )
        raise InvalidInputError(msg)
    if isinstance(partition_rows, bool) or not isinstance(partition_rows, int):
        msg = f"partition_rows must be a whole number, got {partition_rows!r}"
        raise InvalidInputError(msg)
    if partition_rows < 1:
        msg = f"partition_rows must be >= 1, got {partition_rows}"
        raise InvalidInputError(msg)
    trees = _hierarchy_tables(hierarchies or {}, qi)
    rows = sdf.count()
    if rows < k:
        msg = f"the DataFrame has {rows} rows, fewer than k = {k}"
        raise InvalidInputError(msg)
    if method == "optimal":
        return _optimal(f, sdf, k, list(qi), roles, trees, options)
    part = f"{RESERVED_PREFIX}_part"  # no column of sdf starts so (see _roles)
    fraction = min(1.0, SAMPLE_ROWS / rows)
    sample = sdf.select(*[_col(f, c) for c in qi]).sample(fraction=fraction, seed=seed).toArrow()
    target = max(1, round(partition_rows * sample.num_rows / rows))
    _validate_hierarchies(sample, trees)
    tree = _cuts(sample, list(qi), target)
    leaf = _expression(f, tree)
    counted = {r[0]: r[1] for r in sdf.groupBy(leaf.alias(part)).count().collect()}
    merged = _merge(_leaves(tree), counted, k)
    pairs: list[Column] = []
    for leaf_id, group in merged.items():
        pairs += [f.lit(leaf_id), f.lit(group)]
    keyed = sdf.withColumn(part, f.element_at(f.create_map(*pairs), leaf))
    schema = _release_schema(sdf, roles)
    # Positional names inside Spark: applyInArrow resolves every column by name, which
    # fails for names holding backticks; the part's function renames them back.
    plain = [f"c{i}" for i in range(len(columns))]
    spans = _spans(sample, qi, trees, method)
    run = _part_runner(
        k, method, roles, trees, schema, seed, _part_options(method, rows, options), spans
    )
    released = keyed.toDF(*plain, "part").groupBy("part").applyInArrow(run, _renamed(schema, plain))
    return released.toDF(*columns)


def _optimal(
    f: Any,
    sdf: DataFrame,
    k: int,
    qi: list[str],
    roles: Mapping[str, str],
    trees: Mapping[str, pa.Table],
    options: Mapping[str, Any],
) -> DataFrame:
    """The optimal global recoding: Spark's histogram, the driver's search, Spark SQL's view.

    Spark counts the rows per combination of QI values; the driver runs the lattice
    search on that histogram (each combination weighted by its rows) in DuckDB, exactly
    as ``kanon(..., method := 'optimal')``; the release is the portable view of
    ``kanon.materialize(..., method='optimal')`` written in Spark SQL, over the DataFrame
    and one lookup table per generalized QI (temporary views of the session). The view
    counts the classes again as it is read: a class below k is released as ``'*'``.
    """
    import uuid

    import duckdb

    import kanon
    from kanon._options import keywords
    from kanon.plan.catalog import Column as CatalogColumn
    from kanon.plan.catalog import Table
    from kanon.plan.release.options import AnonymizeOptions
    from kanon.store.export import query_sql
    from kanon.store.global_view import search_global
    from kanon.store.owned import helper

    given = keywords("kanon.spark.anonymize", "kanon", {**options, "method": "optimal"})
    plan_options = AnonymizeOptions.of(k, qi, given)
    weight = _fresh("n", qi)
    histogram = (
        sdf.groupBy(*[_col(f, c).alias(c) for c in qi])
        .agg(f.count(f.lit(1)).alias(weight))
        .toArrow()
    )
    _validate_hierarchies(histogram.drop_columns([weight]), trees)
    con = kanon.install(duckdb.connect())
    try:
        by_role = {"qi": qi, "insensitive": [weight]}
        _configured(con, "histogram", histogram, by_role, trees)
        found = search_global(
            con, "histogram", plan_options, "kanon.spark.anonymize(method='optimal')", weight
        )
        lookups = {}
        for j in range(len(qi)):
            sql = found.lookup_sql(j)
            if sql is not None:
                lookups[j] = con.sql(sql).to_arrow_table()
    finally:
        con.close()
    spark = sdf.sparkSession
    name = f"kanon_{uuid.uuid4().hex}"  # Spark's catalog takes [A-Za-z0-9_] only
    source = f"{name}_source"
    sdf.createOrReplaceTempView(source)
    for j, lookup in lookups.items():
        spark.createDataFrame(lookup).createOrReplaceTempView(helper(name, f"h{j}"))
    table = Table(source, ident(source), tuple(CatalogColumn(c, "") for c in sdf.columns))
    identifiers = tuple(c for c in sdf.columns if roles[c] == "identifier")
    return spark.sql(query_sql(found.view_sql(name, table, identifiers), "spark"))


def check(
    sdf: DataFrame,
    qi: list[str],
    sensitive: str | None = None,
    *,
    t_distance: str | None = None,
    recursive_l: int | None = None,
    recursive_c: float | None = None,
    risk_threshold: float = 0.2,
    identifiers: Iterable[str] = (),
    insensitive: Iterable[str] = (),
) -> CheckReport:
    """Measure how anonymous Spark DataFrame ``sdf`` is (the report of ``kanon.check``).

    Spark aggregates: the rows per combination of QI (and sensitive) values, and per
    column without a role the rows holding a value no other row holds; the driver turns
    the histogram into the report with the same query and kernel as ``kanon_check``.

    Args:
        sdf: the table.
        qi: the quasi-identifier columns.
        sensitive: the sensitive column for l-diversity and t-closeness.
        t_distance: ``"equal"`` or ``"ordered"`` (default: ordered for numbers and
            dates); ``"hierarchical"`` is not available on Spark.
        recursive_l: l of recursive (c,l)-diversity (default: the distinct l).
        recursive_c: c of recursive (c,l)-diversity to test.
        risk_threshold: records whose re-identification risk exceeds it are "at risk".
        identifiers: identifier columns: not reported as identifying.
        insensitive: columns released unchanged: not reported as identifying.

    Returns:
        A ``kanon.CheckReport`` (journalist risk and δ-presence, which need a
        population, are None).

    Raises:
        ConfigError: unknown columns, an empty ``qi``.
        InvalidInputError: an argument out of range, ``t_distance="hierarchical"``.
    """
    import duckdb

    import kanon
    from kanon.api.check import report
    from kanon.plan.check import CheckOptions

    f = _spark()
    columns = list(sdf.columns)
    if isinstance(qi, str) or not qi:
        msg = f"qi must be a non-empty list of column names, got {qi!r}"
        raise ConfigError(msg)
    declared = [*qi, *([] if sensitive is None else [sensitive])]
    others = [*_names(identifiers), *_names(insensitive)]
    for name in [*declared, *others]:
        if name not in columns:
            msg = (
                f"column {name!r} is not a column of the DataFrame; its columns are "
                f"{', '.join(columns)}"
            )
            raise ConfigError(msg)
    # QIs and the sensitive column: no name twice, none reserved.
    _roles(declared, qi, (), [] if sensitive is None else [sensitive], ())
    if t_distance == "hierarchical":
        msg = "t_distance 'hierarchical' needs a configured hierarchy: not available on Spark"
        raise InvalidInputError(msg)
    weight = _fresh("kanon_rows", declared)
    options = CheckOptions(
        qi=tuple(qi),
        sensitive=sensitive,
        t_distance=t_distance,
        recursive_l=recursive_l,
        recursive_c=recursive_c,
        risk_threshold=risk_threshold,
        insensitive=(weight,),
    )
    options.validate()
    plain = [f"c{i}" for i in range(len(declared))]
    histogram = (
        sdf.select(*[_col(f, c).alias(p) for c, p in zip(declared, plain, strict=True)])
        .groupBy(*plain)
        .count()
        .toArrow()
        .rename_columns([*declared, weight])
    )
    with duckdb.connect() as con:
        kanon.install(con)
        con.register("kanon_spark_histogram", histogram)
        con.execute("CREATE TABLE dataframe AS SELECT * FROM kanon_spark_histogram")
        found = report(con, "dataframe", options, weight)
    undeclared = [c for c in columns if c not in declared and c not in others]
    identifying = _identifying(f, sdf, undeclared, found.rows)
    return replace(found, identifying_columns=identifying)


def _names(names: Iterable[str]) -> list[str]:
    return [names] if isinstance(names, str) else list(names)


def _identifying(f: Any, sdf: DataFrame, columns: list[str], rows: int) -> tuple[str, ...]:
    """The columns whose values single out rows (``sdf`` has ``rows`` rows).

    kanon's rule: more than 1 % of the rows, and at least 2, hold a value no other row
    holds.
    """
    from kanon.plan.roles import _AT_LEAST, _SHARE

    if not columns:
        return ()
    found = []
    for c in columns:
        singles = (
            sdf.where(_col(f, c).isNotNull())
            .groupBy(_col(f, c).alias("v"))
            .count()
            .where(f.col("count") == 1)
            .count()
        )
        if singles > _SHARE * rows and singles >= _AT_LEAST:
            found.append(c)
    return tuple(found)


def _fresh(stem: str, columns: list[str]) -> str:
    taken = {c.lower() for c in columns}
    i = 0
    while f"{stem}{i}".lower() in taken:
        i += 1
    return f"{stem}{i}"


def _roles(
    columns: list[str],
    qi: list[str],
    identifiers: Iterable[str],
    sensitive: Iterable[str],
    insensitive: Iterable[str],
) -> dict[str, str]:
    """Every column's role; errors name unknown, repeated and undeclared columns."""
    if isinstance(qi, str) or not qi:
        msg = f"qi must be a non-empty list of column names, got {qi!r}"
        raise ConfigError(msg)
    for name in columns:
        if name.lower().startswith(RESERVED_PREFIX):
            msg = (
                f"the DataFrame has a column {name!r}: names beginning with {RESERVED_PREFIX!r} "
                "are reserved for kanon's generated SQL; rename it, for example with "
                f"sdf.withColumnRenamed({name!r}, {name.lstrip('_')!r})"
            )
            raise ConfigError(msg)
    roles: dict[str, str] = {}
    for role, names in (
        ("qi", qi),
        ("identifier", identifiers),
        ("sensitive", sensitive),
        ("insensitive", insensitive),
    ):
        for name in _names(names):
            if name not in columns:
                msg = (
                    f"column {name!r} ({role}) is not a column of the DataFrame; its columns "
                    f"are {', '.join(columns)}"
                )
                raise ConfigError(msg)
            if name in roles:
                msg = f"column {name!r} is given two roles: {roles[name]} and {role}"
                raise ConfigError(msg)
            roles[name] = role
    missing = [c for c in columns if c not in roles]
    if missing:
        msg = (
            f"column(s) {', '.join(missing)} have no role: declare each as identifiers "
            "(released as '*'), sensitive or insensitive (released unchanged)"
        )
        raise ConfigError(msg)
    return roles


def _hierarchy_tables(hierarchies: Mapping[str, Any], qi: list[str]) -> dict[str, pa.Table]:
    out: dict[str, pa.Table] = {}
    for column, table in hierarchies.items():
        if column not in qi:
            msg = f"a hierarchy is given for {column!r}, which is not a QI ({', '.join(qi)})"
            raise ConfigError(msg)
        if isinstance(table, pa.Table):
            out[column] = table
        elif hasattr(table, "toArrow"):
            out[column] = table.toArrow()
        else:
            msg = (
                f"the hierarchy of {column!r} must be a Spark DataFrame or a pyarrow Table, "
                f"got {type(table).__name__}"
            )
            raise ConfigError(msg)
    return out


def _validate_hierarchies(sample: pa.Table, trees: Mapping[str, pa.Table]) -> None:
    """Check each hierarchy on the driver: its shape, and that it covers the sample."""
    import duckdb

    import kanon

    for column, tree in trees.items():
        with duckdb.connect() as con:
            kanon.install(con)
            con.register("kanon_spark_sample", sample.select([column]))
            con.execute("CREATE TABLE dataframe AS SELECT * FROM kanon_spark_sample")
            con.register("kanon_spark_tree", tree)
            con.execute("CREATE TABLE hierarchy AS SELECT * FROM kanon_spark_tree")
            try:
                kanon.hierarchy.validate(con, "hierarchy", table="dataframe", column=column)
            except HierarchyError as exc:
                msg = (
                    f"hierarchies[{column!r}] does not fit the DataFrame (checked on a "
                    f"sample of its rows): {exc}"
                )
                raise HierarchyError(msg) from exc


def _cuts(sample: pa.Table, qi: list[str], target: int) -> _Cut | int:
    """Mondrian cuts of the sample, leaves numbered in order: parts of ≤ ``target`` rows."""
    distinct = {c: pc.count_distinct(sample.column(c)).as_py() for c in qi}
    counter = [0]

    def build(rows: pa.Table) -> _Cut | int:
        if rows.num_rows > target:
            ranked = []
            for c in qi:
                values = _distinct_sorted(rows.column(c))
                if len(values) > 1:
                    width = len(values) / max(1, distinct[c])
                    ranked.append((-width, qi.index(c), c, values))
            for _, _, c, values in sorted(ranked, key=lambda r: r[:2]):
                median = _median(rows.column(c), values)
                if median is None:
                    continue
                left = pc.or_kleene(
                    pc.is_null(rows.column(c)), pc.less_equal(rows.column(c), median)
                )
                mask = pc.fill_null(left, True)
                lo, hi = rows.filter(mask), rows.filter(pc.invert(mask))
                if lo.num_rows and hi.num_rows:
                    return _Cut(c, median, build(lo), build(hi))
        counter[0] += 1
        return counter[0] - 1

    return build(sample)


def _distinct_sorted(column: pa.ChunkedArray) -> list[Any]:
    values = pc.unique(column.drop_null())
    return sorted(values.to_pylist())


def _median(column: pa.ChunkedArray, values: list[Any]) -> Any:
    """The value to cut at (≤ goes left), or None when no cut leaves rows on both sides."""
    data = sorted(column.drop_null().to_pylist())
    if not data:
        return None
    middle = data[(len(data) - 1) // 2]
    if middle == values[-1]:  # everything on one side: cut below the largest value
        i = bisect.bisect_left(values, middle)
        return values[i - 1] if i > 0 else None
    return middle


def _leaves(tree: _Cut | int) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    return _leaves(tree.left) + _leaves(tree.right)


def _expression(f: Any, tree: _Cut | int) -> Column:
    """The leaf id of every row, as one Spark expression of nested CASE WHENs."""
    if isinstance(tree, int):
        leaf: Column = f.lit(tree)
        return leaf
    col = _col(f, tree.column)
    left = col.isNull() | (col <= f.lit(tree.value))
    node: Column = f.when(left, _expression(f, tree.left)).otherwise(_expression(f, tree.right))
    return node


def _col(f: Any, name: str) -> Column:
    """Column ``name`` however it is spelled (dots, backticks, quotes)."""
    column: Column = f.col("`" + name.replace("`", "``") + "`")
    return column


def _merge(order: list[int], counted: Mapping[int, int], k: int) -> dict[int, int]:
    """Group the leaves, in order, so that every group holds ≥ k rows.

    A short last group joins the one before it.
    """
    groups: list[list[int]] = [[]]
    held = [0]
    for leaf in order:
        if held[-1] >= k:
            groups.append([])
            held.append(0)
        groups[-1].append(leaf)
        held[-1] += counted.get(leaf, 0)
    if held[-1] < k and len(groups) > 1:
        tail, short = groups.pop(), held.pop()
        groups[-1] += tail
        held[-1] += short
    return {leaf: g for g, members in enumerate(groups) for leaf in members}


def _release_schema(sdf: DataFrame, roles: Mapping[str, str]) -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    fields = []
    for field in sdf.schema.fields:
        if roles[field.name] in ("qi", "identifier"):
            fields.append(StructField(field.name, StringType(), True))
        else:
            fields.append(field)
    return StructType(fields)


def _renamed(schema: Any, names: list[str]) -> Any:
    from pyspark.sql.types import StructField, StructType

    return StructType(
        [StructField(n, f.dataType, f.nullable) for n, f in zip(names, schema.fields, strict=True)]
    )


def _part_options(method: str, rows: int, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options every part runs with.

    The forest's effort, unless given, is the one the whole table would get in DuckDB
    (``'fast'`` above ``FULL_EFFORT_ROWS`` rows), not a part's (every part is small enough
    for ``'full'``).
    """
    from kanon.plan.release.forest import FULL_EFFORT_ROWS

    out = dict(options)
    if method == "forest" and out.get("effort") is None:
        out["effort"] = "full" if rows <= FULL_EFFORT_ROWS else "fast"
    return out


def _part_runner(
    k: int,
    method: str,
    roles: Mapping[str, str],
    trees: Mapping[str, pa.Table],
    schema: Any,
    seed: int,
    options: Mapping[str, Any],
    spans: tuple[float, ...] | None,
) -> Callable[[pa.Table], pa.Table]:
    """The function ``applyInArrow`` calls per part: kanon in an in-process DuckDB.

    It receives the part's rows under positional names (``c0``, ``c1``, ... and ``part``)
    and returns the release under the same positional names. ``spans``: the whole
    table's, which the part's cuts normalize ranges by (``Request.spans``).
    """
    names = [field.name for field in schema.fields]
    by_role = {r: [c for c in names if roles[c] == r] for r in set(roles.values())}

    def run(table: pa.Table) -> pa.Table:
        import duckdb
        from pyspark import TaskContext

        import kanon
        from kanon._options import keywords
        from kanon.plan.release.options import AnonymizeOptions
        from kanon.plan.release.resolve import plan_anonymize

        # As many threads as the task was given cores (Spark runs one task per core).
        task = TaskContext.get()
        threads = max(1, task.cpus()) if task is not None else 1
        con = kanon.install(duckdb.connect(config={"threads": threads}))
        try:
            _configured(
                con, "part", table.drop_columns(["part"]).rename_columns(names), by_role, trees
            )
            given: dict[str, Any] = {"method": method, **options}
            if method.startswith("forest"):
                given.setdefault("seed", seed)
            plan_options = AnonymizeOptions.of(
                k, None, keywords("kanon.spark.anonymize", "kanon", given)
            )
            # The values are checked as the release runs: a value missing from a
            # hierarchy stops it, named (one pass over the part less).
            plan = plan_anonymize(con, "part", plan_options, check_values=False, spans=spans)
            out = con.sql(plan.sql).to_arrow_table().select(names)
            out = out.cast(pa.schema([_arrow_field(out, f) for f in schema.fields]))
            return out.rename_columns([f"c{i}" for i in range(len(names))])
        finally:
            con.close()

    return run


def _spans(
    sample: pa.Table,
    qi: list[str],
    trees: Mapping[str, pa.Table],
    method: str,
) -> tuple[float, ...] | None:
    """The spans of the QIs' keys over the sample, for the parts' cuts (``Request.spans``).

    A part's own spans would make every QI look equally wide at its start, so its first
    cuts would not follow the table's widest ranges. None for methods that do not cut.
    The keys depend on the QIs' values and hierarchies only, not on the other options.
    """
    import duckdb

    import kanon
    from kanon._options import keywords
    from kanon.plan.release.local import spans_sql
    from kanon.plan.release.options import AnonymizeOptions
    from kanon.plan.release.resolve import plan_anonymize

    if method not in ("forest", "mondrian") or sample.num_rows == 0:
        return None
    con = kanon.install(duckdb.connect())
    try:
        _configured(con, "sample", sample, {"qi": qi}, trees)
        given = keywords("kanon.spark.anonymize", "kanon", {"method": method})
        plan = plan_anonymize(
            con, "sample", AnonymizeOptions.of(1, qi, given), check_undeclared=False
        )
        ((spans,),) = con.execute(spans_sql(plan.table, list(plan.qis))).fetchall()
    finally:
        con.close()
    if any(s is None for s in spans):  # a QI without values in the sample
        return None
    return tuple(float(s) for s in spans)


def _configured(
    con: duckdb.DuckDBPyConnection,
    name: str,
    data: pa.Table,
    by_role: Mapping[str, list[str]],
    trees: Mapping[str, pa.Table],
) -> None:
    """Create table ``name`` from ``data`` in ``con``, with its hierarchies and roles."""
    import kanon

    con.register("kanon_spark_input", data)
    con.execute(f"CREATE TABLE {ident(name)} AS SELECT * FROM kanon_spark_input")
    con.unregister("kanon_spark_input")
    qi: dict[str, str | None] = {}
    for column in by_role.get("qi", []):
        tree = trees.get(column)
        if tree is None:
            qi[column] = None
            continue
        # Named as the argument, so that an error about it reads as the caller wrote it.
        table = f"hierarchies[{column!r}]"
        con.register("kanon_spark_tree", tree)
        con.execute(f"CREATE TABLE {ident(table)} AS SELECT * FROM kanon_spark_tree")
        con.unregister("kanon_spark_tree")
        qi[column] = table
    kanon.configure(
        con,
        name,
        qi=qi,
        identifiers=by_role.get("identifier", []),
        sensitive=by_role.get("sensitive", []),
        insensitive=by_role.get("insensitive", []),
    )


def _arrow_field(table: pa.Table, field: Any) -> pa.Field:
    """The Arrow field of a Spark field: strings for labels, else the part's own type."""
    from pyspark.sql.types import StringType

    if isinstance(field.dataType, StringType):
        return pa.field(field.name, pa.string())
    return table.schema.field(field.name)
