/**
 * A stdlib-only Python program run in the install step (python >= 3.11 for tomllib; pip's vendored
 * `packaging` evaluates markers). It prints what a developer installs to run the tests:
 * - `uv-lock`: the pins of uv.lock reachable from the workspace's own packages through their
 *   dependencies, the developer's groups (uv's default-groups, else `dev`, plus groups named
 *   test/tests/testing) and a test/tests/testing/dev extra, markers evaluated for this interpreter
 *   — what `uv sync` plus the test groups install, for pip when uv is absent;
 * - `uv-args`: `--group NAME` / `--extra NAME` for the same groups and extras (for `uv export`);
 * - `poetry-lock`: the pins of poetry.lock that pyproject's dependencies, every group's and every
 *   extra's, reach through the lock (markers evaluated): what `poetry install --all-groups
 *   --all-extras` installs, for pip, with no poetry in the image;
 * - `pyproject`: `[project]` dependencies, those extras and those `[dependency-groups]` groups
 *   (include-group followed), less requirements on the project itself.
 * The files read are the repo's (hostile): nothing is executed, only parsed.
 */
export const PYTHON_REQS_PROGRAM = String.raw`import sys, tomllib
from pip._vendor.packaging.markers import Marker
from pip._vendor.packaging.utils import canonicalize_name as norm

TEST_NAMES = {"test", "tests", "testing", "dev"}


def load(name):
    try:
        with open(name, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}


def holds(marker):
    try:
        return not marker or Marker(marker).evaluate({"extra": ""})
    except Exception:
        return True


def test_extras(project):
    return sorted(e for e in (project.get("optional-dependencies") or {}) if norm(e) in TEST_NAMES)


def test_groups(pyproject):
    # The groups a developer's "uv sync" gets (default-groups, else dev) plus the test ones.
    names = list((pyproject.get("dependency-groups") or {}).keys())
    default = ((pyproject.get("tool") or {}).get("uv") or {}).get("default-groups", ["dev"])
    if default == "all":
        return names
    wanted = {norm(g) for g in default if isinstance(g, str)} | TEST_NAMES
    return [g for g in names if norm(g) in wanted]


def groups(pyproject):
    table = pyproject.get("dependency-groups") or {}
    out = []

    def walk(name, seen):
        if name in seen or name not in table:
            return
        seen.add(name)
        for item in table[name]:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and "include-group" in item:
                walk(item["include-group"], seen)

    for name in test_groups(pyproject):
        walk(name, set())
    return out


def uv_lock():
    wanted = {norm(g) for g in test_groups(load("pyproject.toml"))}
    by_name = {}
    for pkg in load("uv.lock").get("package", []):
        by_name.setdefault(norm(pkg["name"]), []).append(pkg)

    def local(pkg):
        return any(k in (pkg.get("source") or {}) for k in ("editable", "virtual", "directory", "path"))

    def pick(dep):
        found = by_name.get(norm(dep["name"]), [])
        for pkg in found:
            if "version" in dep and pkg.get("version") != dep["version"]:
                continue
            markers = pkg.get("resolution-markers")
            if not markers or any(holds(m) for m in markers):
                return pkg
        return found[0] if found else None

    pins, seen, todo = set(), set(), []
    for pkg in (p for ps in by_name.values() for p in ps if local(p)):
        todo += pkg.get("dependencies", [])
        for extra, deps in (pkg.get("optional-dependencies") or {}).items():
            if norm(extra) in TEST_NAMES:
                todo += deps
        for group, deps in (pkg.get("dev-dependencies") or {}).items():
            if norm(group) in wanted:
                todo += deps
    while todo:
        dep = todo.pop()
        if not holds(dep.get("marker")):
            continue
        pkg = pick(dep)
        if pkg is None:
            continue
        key = (norm(pkg["name"]), pkg.get("version"), tuple(sorted(dep.get("extra", []))))
        if key in seen:
            continue
        seen.add(key)
        if not local(pkg) and pkg.get("version"):
            pins.add(pkg["name"] + "==" + pkg["version"])
        todo += pkg.get("dependencies", [])
        for extra in dep.get("extra", []):
            todo += (pkg.get("optional-dependencies") or {}).get(extra, [])
    print("\n".join(sorted(pins)))


def requirement_name(req):
    name = ""
    for ch in req.strip():
        if ch.isalnum() or ch in "-_.":
            name += ch
        else:
            break
    return norm(name) if name else ""


def pyproject_reqs():
    pyproject = load("pyproject.toml")
    project = pyproject.get("project") or {}
    reqs = list(project.get("dependencies") or [])
    for extra in test_extras(project):
        reqs += project["optional-dependencies"][extra]
    reqs += groups(pyproject)
    own = norm(project["name"]) if project.get("name") else ""
    print("\n".join(r for r in reqs if requirement_name(r) != own))


def poetry_lock():
    # What "poetry install --all-groups --all-extras" installs, from the lock alone (no poetry in
    # the image): the roots are pyproject's dependencies (tool.poetry's tables and groups, or
    # [project]'s for poetry 2), followed through the lock's dependency tables; a marker that
    # does not hold for this interpreter (colorama on win32) drops the edge.
    from pip._vendor.packaging.requirements import Requirement

    pyproject = load("pyproject.toml")
    by_name = {}
    for pkg in load("poetry.lock").get("package", []):
        if isinstance(pkg, dict) and isinstance(pkg.get("name"), str):
            by_name.setdefault(norm(pkg["name"]), []).append(pkg)

    def specs(spec):
        items = spec if isinstance(spec, list) else [spec]
        return [s if isinstance(s, dict) else {"version": s} for s in items]

    def wanted(spec):
        return [s for s in specs(spec) if holds(s.get("markers"))]

    todo = []

    def add_table(table):
        for name, spec in (table or {}).items():
            if norm(name) != "python":
                for s in wanted(spec):
                    todo.append((name, s.get("extras") or []))

    def add_pep508(req):
        try:
            parsed = Requirement(req)
        except Exception:
            return
        if not parsed.marker or holds(str(parsed.marker)):
            todo.append((parsed.name, sorted(parsed.extras)))

    tool = (pyproject.get("tool") or {}).get("poetry") or {}
    add_table(tool.get("dependencies"))
    add_table(tool.get("dev-dependencies"))
    for group in (tool.get("group") or {}).values():
        add_table((group or {}).get("dependencies") if isinstance(group, dict) else None)
    project = pyproject.get("project") or {}
    for req in project.get("dependencies") or []:
        add_pep508(req)
    for reqs in (project.get("optional-dependencies") or {}).values():
        for req in reqs:
            add_pep508(req)
    own = norm(project.get("name") or tool.get("name") or "")

    pins, seen = set(), set()
    while todo:
        name, extras = todo.pop()
        key = (norm(name), tuple(extras))
        if key in seen or norm(name) == own:
            continue
        seen.add(key)
        found = [p for p in by_name.get(norm(name), []) if holds(p.get("markers") if isinstance(p.get("markers"), str) else None)]
        if not found:
            continue
        pkg = found[0]
        kind = (pkg.get("source") or {}).get("type")
        if kind in ("directory", "file"):
            pass
        elif kind == "git":
            source = pkg["source"]
            pins.add(pkg["name"] + " @ git+" + source.get("url", "") + "@" + str(source.get("resolved_reference") or source.get("reference") or ""))
        elif isinstance(pkg.get("version"), str):
            pins.add(pkg["name"] + "==" + pkg["version"])
        add_table(pkg.get("dependencies"))
        for extra in extras:
            for req in (pkg.get("extras") or {}).get(extra, []):
                add_pep508(req)
    print("\n".join(sorted(pins)))


mode = sys.argv[1]
if mode == "uv-lock":
    uv_lock()
elif mode == "poetry-lock":
    poetry_lock()
elif mode == "uv-args":
    pyproject = load("pyproject.toml")
    args = ["--group " + g for g in test_groups(pyproject)]
    args += ["--extra " + e for e in test_extras(pyproject.get("project") or {})]
    print(" ".join(args))
elif mode == "pyproject":
    pyproject_reqs()
`;
