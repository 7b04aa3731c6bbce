/* identity: the example backend. Read this first if you write a backend.
 *
 * OUTPUTn = INPUTn for every datatype and shape: each input is copied to the
 * output at the same position in the model's configuration. It is complete:
 * built as backends/libinferd_identity.so, it serves every `backend:
 * "identity"` model (the README's `identity` model, `simple_identity`).
 *
 * It shows the whole contract of include/inferd/backend.h:
 *   - the exported entry point returning a static table of functions,
 *   - keeping the host's service table from initialize,
 *   - checking the configuration once, in model_initialize, and failing the
 *     load with a readable error,
 *   - per-request work in instance_execute: read inputs, allocate outputs
 *     through the server, and fail a single request without failing the
 *     others.
 * It is C to show that the ABI is plain C; backends in C++ work the same
 * way and catch every exception at these entry points.
 */
#include <inferd/backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The server's services, kept from initialize. One backend library is
 * initialized once per server, so a global is enough. */
static const InferdHostApi* host;

/* Per-model state: what execute needs from the configuration. The model
 * info stays valid until model_finalize, so pointing into it is fine. */
typedef struct {
  const InferdModelInfo* info;
} IdentityModel;

static InferdError* Initialize(const InferdHostApi* h, void** backend_state) {
  host = h;
  *backend_state = NULL; /* nothing to keep per backend */
  return NULL;
}

static void Finalize(void* backend_state) { (void)backend_state; }

static InferdError* ModelInitialize(void* backend_state, const InferdModelInfo* info,
                                    void** model_state) {
  (void)backend_state;
  char msg[512];
  if (info->input_count != info->output_count) {
    snprintf(msg, sizeof msg,
             "identity model needs as many outputs as inputs, has %u inputs and %u outputs",
             (unsigned)info->input_count, (unsigned)info->output_count);
    return host->error_new(INFERD_ERROR_INVALID_ARGUMENT, msg);
  }
  for (uint32_t i = 0; i < info->input_count; ++i) {
    if (info->inputs[i].datatype != info->outputs[i].datatype) {
      snprintf(msg, sizeof msg, "identity model: output '%s' must have the datatype of input '%s'",
               info->outputs[i].name, info->inputs[i].name);
      return host->error_new(INFERD_ERROR_INVALID_ARGUMENT, msg);
    }
  }
  IdentityModel* model = malloc(sizeof *model);
  if (model == NULL) return host->error_new(INFERD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  model->info = info;
  *model_state = model;
  return NULL;
}

static void ModelFinalize(void* model_state) { free(model_state); }

/* Instances share the model's state: identity has nothing per instance. */
static InferdError* InstanceInitialize(void* model_state, const InferdInstanceInfo* instance,
                                       void** instance_state) {
  (void)instance;
  *instance_state = model_state;
  return NULL;
}

static void InstanceFinalize(void* instance_state) { (void)instance_state; }

/* Copies every input of one request to its output; an error fails only this
 * request. */
static InferdError* ExecuteOne(const IdentityModel* model, InferdRequest* request) {
  for (uint32_t i = 0; i < model->info->input_count; ++i) {
    InferdTensor in;
    InferdError* err = host->request_input_by_name(request, model->info->inputs[i].name, &in);
    if (err != NULL) {
      /* An optional input the client left out: no output for it. */
      host->error_delete(err);
      continue;
    }
    const InferdTensorSpec* out = &model->info->outputs[i];
    InferdMemoryType memory_type = INFERD_MEMORY_CPU;
    int64_t device_id = 0;
    void* buffer = NULL;
    err = host->request_output_alloc(request, out->name, in.datatype, in.shape, in.dims_count,
                                     in.byte_size, &memory_type, &device_id, &buffer);
    if (err != NULL) return err; /* handed back to the server with ownership */
    if (in.byte_size > 0) memcpy(buffer, in.buffer, in.byte_size);
  }
  return NULL;
}

static InferdError* InstanceExecute(void* instance_state, InferdRequest* const* requests,
                                    uint32_t request_count) {
  const IdentityModel* model = instance_state;
  for (uint32_t r = 0; r < request_count; ++r) {
    InferdError* err = ExecuteOne(model, requests[r]);
    if (err != NULL) host->request_set_error(requests[r], err); /* the server owns it now */
  }
  return NULL;
}

static const InferdBackendApi kIdentityApi = {
    .abi_version = INFERD_BACKEND_ABI_VERSION, /* always first */
    .initialize = Initialize,
    .finalize = Finalize,
    .model_initialize = ModelInitialize,
    .model_finalize = ModelFinalize,
    .instance_initialize = InstanceInitialize,
    .instance_finalize = InstanceFinalize,
    .instance_execute = InstanceExecute,
};

/* The one exported symbol. A backend built for several ABI versions would
 * pick its table by host_abi_version; this one has a single table. */
INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &kIdentityApi;
}
