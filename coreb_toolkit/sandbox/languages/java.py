"""Java: javac and the JVM, the heap capped with ``-Xmx`` and the JVM's overhead on top."""

from __future__ import annotations

from coreb_toolkit.sandbox.languages.base import Language

# JVM: an address-space cap breaks it, so the heap is capped with -Xmx at the test's memory
# limit and the cgroup (which counts real memory of the whole tree) gets the JVM's own overhead
# on top. Serial GC, C1 only and a small code cache keep start-up and footprint down.
JAVA_FLAGS = (
    "-Xmx{heap_mb}m",
    "-Xss64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:MaxMetaspaceSize=128m",
    "-Xshare:auto",
)
# javac with C1 only and a class-data-sharing archive of javac's own classes (made once per
# executor by the warm-up build): about half the time of a plain `javac`.
JAVAC = (
    "/usr/bin/javac",
    "-J-Xmx512m",
    "-J-XX:+UseSerialGC",
    "-J-XX:TieredStopAtLevel=1",
    "-J-Xshare:auto",
)
JAVAC_ARGS = ("-encoding", "UTF-8", "-nowarn", "Main.java")
JAVA_WARMUP = """import java.util.*;
import java.util.stream.*;

class Solution {
    public List<Integer> f(List<Integer> xs) {
        return xs.stream().map(x -> x + 1).collect(Collectors.toList());
    }
}

public class Main {
    public static void main(String[] args) {
        System.out.println(new Solution().f(Arrays.asList(1, 2, 3)));
    }
}
"""

JAVA = Language(
    name="java",
    source="Main.java",
    compile=(*JAVAC, "-J-XX:SharedArchiveFile=/jcache/javac.jsa", *JAVAC_ARGS),
    run=("/usr/bin/java", *JAVA_FLAGS, "-cp", "/app", "Main"),
    binaries=("/usr/bin/javac", "/usr/bin/java"),
    debian_package="default-jdk-headless",
    memory_overhead_mb=192,
    build_cache="/jcache",
    build_cache_writable=False,
    warmup={"Main.java": JAVA_WARMUP},
    warmup_compile=(*JAVAC, "-J-XX:ArchiveClassesAtExit=/jcache/javac.jsa", *JAVAC_ARGS),
    assertion_failure=r"java\.lang\.AssertionError",
    # even when the program goes on: a thread that is not main died of it
    out_of_memory_any_exit=r"java\.lang\.OutOfMemoryError",
)
