"""Ruby: parsed when run (a syntax error is then the build's failure)."""

from __future__ import annotations

from coreb_toolkit.sandbox.languages.base import Language

RUBY = Language(
    name="ruby",
    source="main.rb",
    compile=None,  # a separate `ruby -c` would double the cost of every candidate
    syntax_error=r"syntax error|\(SyntaxError\)",
    # -rset: Ruby >= 3.2 autoloads Set, which MBXP's solutions assume; 3.1 does not.
    run=("/usr/bin/ruby", "-rset", "/app/main.rb"),
    binaries=("/usr/bin/ruby",),
    debian_package="ruby",
    # MBXP's Ruby tests raise "Error at test case N"; minitest/test-unit style failures.
    assertion_failure=r"Error at test case|Assertion failed|\(Minitest::Assertion\)",
)
