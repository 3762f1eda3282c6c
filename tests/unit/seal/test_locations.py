"""Where the seal's test switches apply (rerank_study.seal.locations): a TEST_FIXTURE lock folder of the test
suite is a fixture; the repository's own lockfiles/ never is, not even with the marker in it (checked on a
plain copy of this checkout's files)."""

from conftest import DATA, ROOT, make_lockdir
from seal_world import code_copy

from rerank_study.seal import locations


def test_the_repository_lockfiles_are_never_a_test_fixture(tmp_path):
    assert (DATA / "lockfiles" / locations.TEST_FIXTURE).is_file()
    assert not (ROOT / "lockfiles" / locations.TEST_FIXTURE).exists()
    assert not locations.is_test_fixture(ROOT / "lockfiles", ROOT)
    # even with the marker in it, a checkout's own lockfiles/ never counts as a fixture
    repo = code_copy(tmp_path / "repo")
    (repo / "lockfiles" / locations.TEST_FIXTURE).write_text("x\n")
    assert not locations.is_test_fixture(repo / "lockfiles", repo)
    assert locations.is_test_fixture(make_lockdir(tmp_path / "fixture-lock"), repo)
