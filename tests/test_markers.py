"""The skip-with-reason markers skip, and say why."""

from __future__ import annotations


def test_missing_data_and_toolchain_skip_with_reason(pytester, repo_root, monkeypatch):
    monkeypatch.setenv("COREB_SHARED_DATA", str(pytester.path / "no-such-folder"))
    pytester.makeconftest((repo_root / "tests" / "conftest.py").read_text())
    pytester.makefile(".cfg", setup=(repo_root / "setup.cfg").read_text())
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.needs_shared_data
        def test_data():
            raise AssertionError("must not run")

        @pytest.mark.needs_toolchain("no-such-compiler-xyz")
        def test_tool():
            raise AssertionError("must not run")

        @pytest.mark.needs_toolchain("sh")
        def test_present_tool():
            pass

        @pytest.mark.slow
        def test_slow():
            raise AssertionError("deselected by default")
        """
    )
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=2, deselected=1)
    result.stdout.fnmatch_lines(
        ["*needs the real source data at*no-such-folder*", "*needs the 'no-such-compiler-xyz'*"]
    )
