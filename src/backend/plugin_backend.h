// Plugin backends: the C ABI of include/inferd/backend.h adapted to the
// internal Backend / BackendModel / BackendInstance interface, so that the
// rest of the server never sees the C tables.
//
// A plugin comes either from a shared library (LoadPluginLibrary: dlopen
// with RTLD_LOCAL, the one exported symbol inferd_backend_entry) or from a
// table compiled into the server (MakePluginBackend with a built-in entry
// function); both go through the same checks and the same adapter.
//
// Ownership: the returned Backend owns the plugin's backend state and calls
// its finalize when the last reference goes away (models keep their backend
// alive). Libraries are never unloaded once initialized: frameworks such as
// libtorch do not survive dlclose; a library refused before initialize is
// closed again.
//
// Versions: tables of ABI versions INFERD_BACKEND_ABI_MIN_VERSION (1) to
// INFERD_BACKEND_ABI_VERSION (3) are accepted and all get the one host table
// (HostApi, plugin_host.h: versions 2 and 3 only appended to it); a table's
// v3 `capabilities` is read only from tables of version 3 or later.
//
// Errors: a library that cannot be opened, lacks the entry symbol, returns
// no table, speaks an ABI version outside that range, leaves a function pointer NULL or
// fails to initialize is refused with a Status naming the file and the
// reason. An exception that escapes a plugin anyway becomes an INTERNAL
// error, never a crash of the server.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "inferd/backend.h"

namespace inferd {

// Checks `entry`'s table (ABI version, every function present) and
// initializes the backend. `origin` names where it came from in messages
// ("built-in", a library path).
StatusOr<std::shared_ptr<Backend>> MakePluginBackend(const std::string& name,
                                                     InferdBackendEntryFn entry,
                                                     const std::string& origin);

// Opens the shared library at `path` and makes a backend of it.
StatusOr<std::shared_ptr<Backend>> LoadPluginLibrary(const std::string& name,
                                                     const std::string& path);

// The service table the server hands to every plugin (every v2 function
// filled; defined in plugin_host_calls.cc).
const InferdHostApi* HostApi();

// Converts a plugin's error into a Status and deletes the error. nullptr is
// OK. Codes outside gRPC's range become UNKNOWN.
Status StatusFromPluginError(InferdError* error);

}  // namespace inferd
