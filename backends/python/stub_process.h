// Starting and stopping stub processes (/usr/bin/python3 running
// inferd_python_stub.py).
//
// Spawn forks on one long-lived thread of the library (the "spawner"):
// PR_SET_PDEATHSIG fires when the thread that forked exits, not the process,
// so forking on a loader thread that ends later would kill the stub. The
// child sets PR_SET_PDEATHSIG(SIGKILL), checks its parent is still there,
// keeps only its end of the socketpair (as fd 3) and stdin/out/err, and
// execs. The stub also watches its parent pid, so no stub outlives inferd.
// Errors: Spawn throws inferd_backend::BackendError.
#pragma once

#include <sys/types.h>

#include <string>

namespace inferd_python {

struct StubProcess {
  pid_t pid = -1;
  int fd = -1;  // our end of the socketpair
};

// The Python interpreter the stubs run: $INFERD_PYTHON_EXECUTABLE, else
// Debian's /usr/bin/python3 (the one that sees python3-numpy/-torch).
std::string PythonExecutable();

// The directory holding inferd_python_stub.py and
// triton_python_backend_utils.py: "python" next to this library.
std::string StubDirectory();

// Starts `python stub_dir/inferd_python_stub.py 3 <our pid> <mode>`.
StubProcess SpawnStub(const std::string& mode);

// "exited with status 3", "was killed by signal 9 (Killed)".
std::string DescribeExit(int status);

}  // namespace inferd_python
