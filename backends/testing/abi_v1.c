/* The identity example backend declaring backend ABI version 1 (the table
 * layout of version 1 is a prefix of version 2's): tests load it to check
 * that a server of version 2 still serves backends built for version 1. */
#include <inferd/backend.h>
#undef INFERD_BACKEND_ABI_VERSION
#define INFERD_BACKEND_ABI_VERSION 1u
#include "identity/identity.c"
