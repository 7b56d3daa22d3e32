"""C++: g++ (GNU C++17), Boost headers and OpenSSL's libcrypto as HumanEval-X's harness has."""

from __future__ import annotations

from coreb_toolkit.sandbox.languages.base import Language

CPP = Language(
    name="cpp",
    source="main.cpp",
    # Boost headers and -lcrypto (OpenSSL's MD5) as HumanEval-X's C++ harness has them; the
    # linker drops libraries a program does not use (--as-needed).
    compile=("/usr/bin/g++", "-std=gnu++17", "-O2", "-pipe", "-o", "main", "main.cpp", "-lcrypto"),
    run=("/app/main",),
    binaries=("/usr/bin/g++",),
    debian_package="g++ libboost-dev libssl-dev",
    assertion_failure=r"Assertion `.*' failed",
)
