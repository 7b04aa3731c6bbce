/* A backend built for an ABI version this server does not speak. Tests load
 * it to check that the server refuses it with a clear reason and without
 * calling anything but the entry point. */
#include <inferd/backend.h>
#include <stdlib.h>

static InferdError* Initialize(const InferdHostApi* host, void** state) {
  (void)host;
  (void)state;
  abort(); /* must never be called */
}

static const InferdBackendApi kApi = {
    42u /* no server speaks it */, Initialize, NULL, NULL, NULL, NULL, NULL, NULL, 0,
};

INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &kApi;
}
