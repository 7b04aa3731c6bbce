/* inferd backend ABI, version 3: the only header a backend sees.
 *
 * A backend is a shared library named libinferd_<name>.so in the server's
 * --backend-directory. It exports one symbol, inferd_backend_entry, which
 * returns a table of the backend's functions (InferdBackendApi). The server
 * hands the backend a second table, InferdHostApi, of the services it offers:
 * errors, logging, reading inputs and allocating outputs of requests.
 * backends/identity/identity.c is a complete backend in about 130 lines;
 * read it first. docs/backends.md covers building, loading and versioning.
 *
 * Lifecycle (each successful *_initialize is matched by exactly one
 * *_finalize; a failed one is not finalized):
 *
 *   initialize                       once, before the first model of the backend loads
 *     model_initialize               once per loaded model version
 *       instance_initialize          once per instance of its instance groups
 *         instance_execute           many times, one batch of requests each
 *       instance_finalize
 *     model_finalize
 *   finalize                         when the server stops
 *
 * Threading: model_initialize/model_finalize of different models may run at
 * the same time (models load in parallel). instance_execute of one instance
 * is only ever called from that instance's own thread and never concurrently
 * with itself; different instances of a model execute at the same time, so
 * model state shared by instances must be safe for concurrent reads. A
 * backend may block in instance_execute (that is what the thread is for);
 * it should not block elsewhere longer than loading takes.
 *
 * Errors: a function that can fail returns an InferdError*, NULL on success.
 * Errors are created with InferdHostApi.error_new. No C++ exception, longjmp
 * or signal may cross this interface: a C++ backend catches everything at
 * each entry point and turns it into an error.
 *
 * Ownership rules, stated again at each function: strings and arrays the
 * server passes stay valid for the lifetime stated there and are never
 * modified or freed by the backend; an error returned by a backend function
 * is owned by the server from then on; an error returned by a host function
 * is owned by the backend, which either returns it (handing it back) or
 * deletes it with error_delete.
 *
 * Versioning: INFERD_BACKEND_ABI_VERSION changes whenever any type or
 * function here changes. Versions 2 and 3 only append: fields at the end of
 * InferdModelInfo, InferdHostApi and InferdBackendApi (marked "v2", "v3"),
 * and new opaque types. A server of version 3 therefore loads backends built
 * for version 1, 2 or 3 (the table's abi_version says which) and hands all
 * the same host table; an older backend simply never reads past the fields
 * it knows, and the server never reads past the end of an older table. Backends of any other
 * version are refused with a clear load error. Only the abi_version fields,
 * which come first in both tables, are promised to stay where they are.
 *
 * Version 2 adds (docs/backends.md, "Decoupled backends" and "Calling other
 * models"):
 *   - request metadata: correlation id, sequence flags, timeout, custom
 *     parameters as JSON, the requested output names;
 *   - response factories: a request's answers sent by the backend itself,
 *     0..N of them, from any thread, after instance_execute returned
 *     (decoupled models), or exactly one (any model);
 *   - calls into the server: a backend starts an inference request on any
 *     model of the server and receives its responses through a callback
 *     (Triton's "BLS").
 *
 * Version 3 appends (docs/backends.md, "CPU thread hints"):
 *   - InferdHostApi.request_cpu_threads: the CPU threads the server gives the
 *     execution a request is part of (automatic instance layout);
 *   - InferdBackendApi.capabilities: what the backend supports beyond the
 *     base contract (INFERD_BACKEND_CAP_*). The server reads it only from
 *     tables whose abi_version is 3 or more, so v1 and v2 tables, which end
 *     before it, still load unchanged.
 */
#ifndef INFERD_BACKEND_H_
#define INFERD_BACKEND_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFERD_BACKEND_ABI_VERSION 3u
/* The oldest backend ABI this header's server still loads. */
#define INFERD_BACKEND_ABI_MIN_VERSION 1u

/* Marks the entry point for export from a shared library. Link backends with
 * a version script that exports only inferd_backend_entry
 * (backends/common/exports.map). */
#if defined(__GNUC__)
#define INFERD_BACKEND_EXPORT __attribute__((visibility("default")))
#else
#define INFERD_BACKEND_EXPORT
#endif

/* ---- plain values ------------------------------------------------------- */

/* Error codes: gRPC's codes (HTTP: INVALID_ARGUMENT 400, NOT_FOUND 404,
 * UNAVAILABLE 503, RESOURCE_EXHAUSTED 429, others 500). */
typedef int32_t InferdErrorCode;
enum {
  INFERD_ERROR_CANCELLED = 1,
  INFERD_ERROR_UNKNOWN = 2,
  INFERD_ERROR_INVALID_ARGUMENT = 3,
  INFERD_ERROR_DEADLINE_EXCEEDED = 4,
  INFERD_ERROR_NOT_FOUND = 5,
  INFERD_ERROR_ALREADY_EXISTS = 6,
  INFERD_ERROR_PERMISSION_DENIED = 7,
  INFERD_ERROR_RESOURCE_EXHAUSTED = 8,
  INFERD_ERROR_FAILED_PRECONDITION = 9,
  INFERD_ERROR_ABORTED = 10,
  INFERD_ERROR_OUT_OF_RANGE = 11,
  INFERD_ERROR_UNIMPLEMENTED = 12,
  INFERD_ERROR_INTERNAL = 13,
  INFERD_ERROR_UNAVAILABLE = 14
};

/* Tensor element types. BYTES tensors are serialised as the protocol sends
 * them: each element a 4-byte little-endian length followed by its bytes. */
typedef int32_t InferdDataType;
enum {
  INFERD_TYPE_INVALID = 0,
  INFERD_TYPE_BOOL = 1,
  INFERD_TYPE_UINT8 = 2,
  INFERD_TYPE_UINT16 = 3,
  INFERD_TYPE_UINT32 = 4,
  INFERD_TYPE_UINT64 = 5,
  INFERD_TYPE_INT8 = 6,
  INFERD_TYPE_INT16 = 7,
  INFERD_TYPE_INT32 = 8,
  INFERD_TYPE_INT64 = 9,
  INFERD_TYPE_FP16 = 10,
  INFERD_TYPE_FP32 = 11,
  INFERD_TYPE_FP64 = 12,
  INFERD_TYPE_BYTES = 13,
  INFERD_TYPE_BF16 = 14
};

/* Where a buffer lives. The CPU build only ever hands out CPU memory. */
typedef int32_t InferdMemoryType;
enum { INFERD_MEMORY_CPU = 0, INFERD_MEMORY_CPU_PINNED = 1, INFERD_MEMORY_GPU = 2 };

/* An instance group's kind (config `instance_group { kind }`). */
typedef int32_t InferdInstanceKind;
enum { INFERD_INSTANCE_CPU = 0, INFERD_INSTANCE_GPU = 1, INFERD_INSTANCE_MODEL = 2 };

/* Sequence control inputs that the server adds to requests of a sequence
 * batching model (config `sequence_batching { control_input }`). */
typedef int32_t InferdControlKind;
enum {
  INFERD_CONTROL_START = 0,
  INFERD_CONTROL_READY = 1,
  INFERD_CONTROL_END = 2,
  INFERD_CONTROL_CORRID = 3
};

typedef int32_t InferdLogLevel;
enum { INFERD_LOG_INFO = 0, INFERD_LOG_WARNING = 1, INFERD_LOG_ERROR = 2 };

/* v2: request flags of a sequence request (request_flags). */
enum { INFERD_REQUEST_SEQUENCE_START = 1, INFERD_REQUEST_SEQUENCE_END = 2 };

/* v3: InferdBackendApi.capabilities bits. CPU_THREAD_HINT: the backend runs
 * an execution with the number of CPU threads request_cpu_threads returns
 * (when it is not 0), so the server may choose a model's instance count and
 * threads per instance itself (an instance group with count 0 or none). */
enum { INFERD_BACKEND_CAP_CPU_THREAD_HINT = 1u };

/* v2: response_send flags. */
enum { INFERD_RESPONSE_FINAL = 1 };

/* v2: the type of a parameter value (response_set_parameter,
 * infer_set_parameter): value points at an int32_t holding 0/1 for BOOL, an
 * int64_t for INT, a double for DOUBLE, a NUL-terminated string for STRING. */
typedef int32_t InferdParameterType;
enum {
  INFERD_PARAMETER_BOOL = 0,
  INFERD_PARAMETER_INT = 1,
  INFERD_PARAMETER_DOUBLE = 2,
  INFERD_PARAMETER_STRING = 3
};

/* v2: which kind of correlation id a request carries. */
typedef int32_t InferdCorrelationKind;
enum { INFERD_CORRELATION_NONE = 0, INFERD_CORRELATION_UINT = 1, INFERD_CORRELATION_STRING = 2 };

/* ---- opaque server objects ---------------------------------------------- */

/* An error: a code and a message. Created by error_new; see the ownership
 * rules above. */
typedef struct InferdError InferdError;

/* One request of a batch, valid only during the instance_execute call that
 * received it. */
typedef struct InferdRequest InferdRequest;

/* v2: where the answers to one request go, once the backend has taken them
 * over with response_factory_new. Owned by the backend until
 * response_factory_delete; usable from any thread, one call at a time (the
 * backend serialises its own calls on one factory). */
typedef struct InferdResponseFactory InferdResponseFactory;

/* v2: one response: built by the backend (response_new) and sent or deleted,
 * or received from the server (an infer callback) and deleted. */
typedef struct InferdResponse InferdResponse;

/* v2: an inference request the backend builds and starts on a model of this
 * server (infer_new ... infer_start). */
typedef struct InferdInferCall InferdInferCall;

/* v2: the server's side of a loaded model version (InferdModelInfo.host_model),
 * valid until model_finalize returns. */
typedef struct InferdHostModel InferdHostModel;

/* v2: receives the responses of a call started with infer_start. Called one
 * or more times, from any thread (possibly before infer_start returns), the
 * last time with INFERD_RESPONSE_FINAL in `flags`, never after that. Each
 * call carries a response (the receiver owns it: read it with
 * response_output_count/response_output, then response_delete), or an error
 * (the receiver owns it: error_delete), or neither (a FINAL flag alone).
 * A failed request is one call with the error and FINAL. The callback must
 * not block for long: it runs on a server thread. */
typedef void (*InferdInferCallback)(void* user_data, InferdResponse* response, InferdError* error,
                                    uint32_t flags);

/* ---- descriptions the server fills in ----------------------------------- */

/* An input or output of the model's configuration. */
typedef struct InferdTensorSpec {
  const char* name;
  InferdDataType datatype;
  uint32_t dims_count;
  const int64_t* dims; /* without the batch dimension; -1 = any size */
  int32_t optional;    /* inputs: 1 if requests may leave it out */
} InferdTensorSpec;

/* A config `parameters { key value { string_value } }` entry. */
typedef struct InferdParameter {
  const char* key;
  const char* value;
} InferdParameter;

/* A sequence control input the server delivers with each request. */
typedef struct InferdControlInput {
  const char* name;
  InferdControlKind kind;
  InferdDataType datatype;
} InferdControlInput;

/* The model being loaded. Every pointer in it, and the arrays they point to,
 * stay valid until model_finalize returns. */
typedef struct InferdModelInfo {
  const char* name;
  int64_t version;
  const char* model_directory;        /* <repository>/<model> */
  const char* version_directory;      /* <repository>/<model>/<version> */
  const char* default_model_filename; /* config value; "" when the config names none */
  const char* platform;               /* e.g. "pytorch_libtorch"; may be "" */
  const char* config_json;            /* the normalised config, as GET .../config returns it */
  int64_t max_batch_size;             /* 0: requests have no batch dimension */
  uint32_t instance_count;            /* instances across all instance groups */
  uint32_t input_count;
  const InferdTensorSpec* inputs;
  uint32_t output_count;
  const InferdTensorSpec* outputs;
  uint32_t parameter_count;
  const InferdParameter* parameters;
  uint32_t control_count;
  const InferdControlInput* controls;
  /* v2 */
  int32_t decoupled;           /* 1: model_transaction_policy { decoupled: true } */
  InferdHostModel* host_model; /* for model_set_unavailable */
} InferdModelInfo;

/* The instance being created; valid during instance_initialize only (copy
 * what you need). */
typedef struct InferdInstanceInfo {
  const char* name; /* e.g. "digits_0" */
  InferdInstanceKind kind;
  int32_t device_id; /* GPU ordinal for INFERD_INSTANCE_GPU, else 0 */
} InferdInstanceInfo;

/* An input tensor of a request. Every pointer stays valid during the
 * instance_execute call that received the request. For a model with
 * max_batch_size > 0, shape[0] is the request's batch size. */
typedef struct InferdTensor {
  const char* name;
  InferdDataType datatype;
  uint32_t dims_count;
  const int64_t* shape;
  const void* buffer; /* byte_size bytes, row-major, little-endian */
  uint64_t byte_size;
  InferdMemoryType memory_type;
  int64_t device_id;
} InferdTensor;

/* ---- services of the server (host) -------------------------------------- */

typedef struct InferdHostApi {
  uint32_t abi_version; /* INFERD_BACKEND_ABI_VERSION of the server */

  /* Errors. error_new copies `message` (may be NULL) and never fails. The
   * caller owns the new error. error_code/error_message read an error the
   * caller holds; the message is valid until the error is deleted. */
  InferdError* (*error_new)(InferdErrorCode code, const char* message);
  InferdErrorCode (*error_code)(const InferdError* error);
  const char* (*error_message)(const InferdError* error);
  void (*error_delete)(InferdError* error);

  /* Writes one line to the server's log; `message` is copied. Any thread. */
  void (*log)(InferdLogLevel level, const char* message);

  /* Requests (during instance_execute only). Strings returned stay valid
   * for the same time. */
  const char* (*request_id)(const InferdRequest* request); /* "" if none */
  uint32_t (*request_input_count)(const InferdRequest* request);
  /* Fills *tensor for the input at `index` (0..count-1) in the order the
   * request holds them, or by name. NOT_FOUND if there is none; the request
   * may lack an optional input. */
  InferdError* (*request_input)(const InferdRequest* request, uint32_t index, InferdTensor* tensor);
  InferdError* (*request_input_by_name)(const InferdRequest* request, const char* name,
                                        InferdTensor* tensor);
  /* 1 if the client asked for output `name` (or asked for no particular
   * outputs, which means all), else 0. A backend may skip outputs that
   * nobody asked for; the server drops them anyway. */
  int32_t (*request_output_requested)(const InferdRequest* request, const char* name);
  /* Allocates output `name` of the request: `byte_size` bytes for a tensor
   * of `datatype` and `shape` (dims_count values, batch dimension included
   * for batching models). The server owns the buffer; the backend writes all
   * of it before instance_execute returns. `*memory_type`/`*device_id` say
   * where the backend would like the buffer and come back saying where it
   * is (CPU, device 0, in this release). INVALID_ARGUMENT if the model has
   * no such output, the datatype differs from the config's, the output was
   * already allocated, or byte_size does not fit shape and datatype. */
  InferdError* (*request_output_alloc)(InferdRequest* request, const char* name,
                                       InferdDataType datatype, const int64_t* shape,
                                       uint32_t dims_count, uint64_t byte_size,
                                       InferdMemoryType* memory_type, int64_t* device_id,
                                       void** buffer);
  /* Fails this request alone with `error`; the server takes ownership of
   * `error`. The other requests of the batch are unaffected. Only the first
   * error set on a request counts; outputs it already has are discarded. */
  void (*request_set_error)(InferdRequest* request, InferdError* error);

  /* ---- v2: request metadata (during instance_execute only; strings stay
   * valid for the same time) ---- */

  /* INFERD_CORRELATION_NONE/UINT/STRING; fills *uint_id or *string_id
   * (either pointer may be NULL when the caller does not want it). */
  InferdCorrelationKind (*request_correlation_id)(const InferdRequest* request, uint64_t* uint_id,
                                                  const char** string_id);
  /* INFERD_REQUEST_SEQUENCE_START | INFERD_REQUEST_SEQUENCE_END bits. */
  uint32_t (*request_flags)(const InferdRequest* request);
  /* The request's timeout in microseconds; 0 = none. */
  uint64_t (*request_timeout_us)(const InferdRequest* request);
  /* The request's custom parameters (those the server does not interpret)
   * as one JSON object, e.g. {"temperature":0.5,"mode":"fast"}; "{}" when
   * none. */
  const char* (*request_parameters_json)(const InferdRequest* request);
  /* The outputs the client asked for, in its order; when it named none, the
   * model's configured outputs. */
  uint32_t (*request_output_name_count)(const InferdRequest* request);
  const char* (*request_output_name)(const InferdRequest* request, uint32_t index);
  /* 1 once the client has gone away (disconnect, gRPC cancel, deadline) or
   * the request timed out; the backend may stop early. */
  int32_t (*request_is_cancelled)(const InferdRequest* request);

  /* ---- v2: response factories ----
   *
   * response_factory_new takes a request's answer over from the
   * instance_execute protocol: from then on the request is answered only
   * through the factory, and the outputs allocated on the request itself are
   * ignored. At most one factory per request; FAILED_PRECONDITION for a
   * second. The factory (and the answers through it) may outlive
   * instance_execute; the request itself may not be read after
   * instance_execute returns: copy what the answers need first.
   *
   * A decoupled model sends 0..N responses and then INFERD_RESPONSE_FINAL
   * (with the last response or alone). A model that is not decoupled sends
   * exactly one response, with FINAL or followed by a FINAL alone.
   * An error set on the request (request_set_error, or an error returned by
   * instance_execute) after its factory exists is sent through the factory
   * as the final answer, unless FINAL was sent already.
   * Deleting a factory before FINAL was sent finishes the request with
   * INTERNAL "backend released the request without a final response". */
  InferdError* (*response_factory_new)(InferdRequest* request, InferdResponseFactory** factory);
  /* 1 once the client has gone away; further responses would be dropped. */
  int32_t (*response_factory_is_cancelled)(const InferdResponseFactory* factory);
  void (*response_factory_delete)(InferdResponseFactory* factory);

  /* A new, empty response for the factory's request; the backend owns it
   * until it sends or deletes it. */
  InferdError* (*response_new)(InferdResponseFactory* factory, InferdResponse** response);
  /* Allocates output `name` of a response, with request_output_alloc's
   * rules (the model's configured outputs; datatype and byte size checked).
   * The buffer belongs to the response. Outputs the client did not ask for
   * are dropped when the response is sent. */
  InferdError* (*response_output_alloc)(InferdResponse* response, const char* name,
                                        InferdDataType datatype, const int64_t* shape,
                                        uint32_t dims_count, uint64_t byte_size,
                                        InferdMemoryType* memory_type, int64_t* device_id,
                                        void** buffer);
  /* Sets a response parameter (e.g. for the generate extension's JSON);
   * `value` as InferdParameterType says; copied. */
  InferdError* (*response_set_parameter)(InferdResponse* response, const char* key,
                                         InferdParameterType type, const void* value);
  /* Sends through `factory`: `response` (may be NULL only with FINAL), or,
   * when `error` is not NULL, that error as this request's answer (the
   * response, if any, is then discarded; an error is always final). The
   * server takes ownership of `response` and `error` in every case, also when
   * it returns an error: FAILED_PRECONDITION after FINAL was sent, or for a
   * second response of a model that is not decoupled; INVALID_ARGUMENT for
   * unknown flags or flags 0 without a response. */
  InferdError* (*response_send)(InferdResponseFactory* factory, InferdResponse* response,
                                uint32_t flags, InferdError* error);
  /* Reads a response the backend received (infer callback) or built. */
  uint32_t (*response_output_count)(const InferdResponse* response);
  InferdError* (*response_output)(const InferdResponse* response, uint32_t index,
                                  InferdTensor* tensor);
  /* The response's parameters as one JSON object ("{}" when none); valid
   * until the response is deleted or sent. */
  const char* (*response_parameters_json)(const InferdResponse* response);
  void (*response_delete)(InferdResponse* response);

  /* ---- v2: calls into the server ----
   *
   * infer_new creates a request for `model` (version -1: the server's
   * choice); the setters fill it (inputs are copied); infer_start submits it
   * as any client request would be (validation, scheduling, statistics) and
   * takes ownership of the call whatever it returns; an error it returns
   * means the callback will never run. infer_delete discards a call that was
   * never started. A backend must not wait inside instance_execute for a call
   * on its own model: with no free instance that never finishes. */
  InferdError* (*infer_new)(const char* model, int64_t version, InferdInferCall** call);
  InferdError* (*infer_set_id)(InferdInferCall* call, const char* id);
  InferdError* (*infer_set_correlation_id)(InferdInferCall* call, InferdCorrelationKind kind,
                                           uint64_t uint_id, const char* string_id);
  InferdError* (*infer_set_flags)(InferdInferCall* call, uint32_t flags);
  InferdError* (*infer_set_timeout_us)(InferdInferCall* call, uint64_t timeout_us);
  InferdError* (*infer_set_parameter)(InferdInferCall* call, const char* key,
                                      InferdParameterType type, const void* value);
  InferdError* (*infer_add_input)(InferdInferCall* call, const char* name, InferdDataType datatype,
                                  const int64_t* shape, uint32_t dims_count, const void* data,
                                  uint64_t byte_size);
  InferdError* (*infer_add_requested_output)(InferdInferCall* call, const char* name);
  InferdError* (*infer_start)(InferdInferCall* call, InferdInferCallback callback, void* user_data);
  void (*infer_delete)(InferdInferCall* call);

  /* ---- v2: model health ----
   * The backend reports that a loaded model can no longer serve (its worker
   * process died, a call hung past its limit). The server marks the version
   * UNAVAILABLE with `reason` (copied) in the repository index and readiness,
   * and answers its new requests with UNAVAILABLE naming the reason; requests
   * already handed to the backend are still the backend's to answer. Loading
   * the model again (load API, repository poll) replaces the version. Any
   * thread, any time until model_finalize returns. */
  void (*model_set_unavailable)(InferdHostModel* model, const char* reason);

  /* ---- v3: CPU thread hint (during instance_execute only) ----
   * The number of CPU threads the server gives the execution `request` is
   * part of (the same for every request of a batch); 0: the server makes no
   * choice, use the backend's own setting. Non-zero only for a model whose
   * layout the server chooses (instance group count 0 or none) and whose
   * backend declares INFERD_BACKEND_CAP_CPU_THREAD_HINT. The value may change
   * between executions of one instance while the server tries layouts; a
   * backend applies it to the calling (instance) thread, cheaply when it is
   * the same as last time. An explicit setting of the model (a thread-count
   * parameter) may take precedence; say so in the backend's documentation. */
  uint32_t (*request_cpu_threads)(const InferdRequest* request);
} InferdHostApi;

/* ---- functions of the backend ------------------------------------------- */

typedef struct InferdBackendApi {
  /* INFERD_BACKEND_ABI_VERSION the backend was compiled against. Must come
   * first: the server reads it before anything else. */
  uint32_t abi_version;

  /* Called once, before the backend's first model loads. `host` stays valid
   * until finalize returns; keep the pointer. *backend_state is the
   * backend's own (may stay NULL) and is passed back to model_initialize and
   * finalize. */
  InferdError* (*initialize)(const InferdHostApi* host, void** backend_state);
  void (*finalize)(void* backend_state);

  /* Loads a model version: reads its files, checks the configuration.
   * `model` stays valid until model_finalize returns. An error makes the
   * model UNAVAILABLE with the error's message as the reason.
   * *model_state is passed to instance_initialize and model_finalize. */
  InferdError* (*model_initialize)(void* backend_state, const InferdModelInfo* model,
                                   void** model_state);
  void (*model_finalize)(void* model_state);

  /* Creates one instance of a loaded model (for example, a copy of the
   * weights on a device). `instance` is valid during this call only.
   * *instance_state is passed to instance_execute and instance_finalize. */
  InferdError* (*instance_initialize)(void* model_state, const InferdInstanceInfo* instance,
                                      void** instance_state);
  void (*instance_finalize)(void* instance_state);

  /* Runs one batch: `requests[0..request_count-1]`, request_count >= 1. For
   * each request the backend either allocates and writes its outputs or
   * fails it with request_set_error. The array and the requests are valid
   * during this call only. Returning an error fails every request of the
   * batch that has not been failed already (convenient when the whole batch
   * failed); the server takes ownership of the error. */
  InferdError* (*instance_execute)(void* instance_state, InferdRequest* const* requests,
                                   uint32_t request_count);

  /* v3: INFERD_BACKEND_CAP_* bits; 0 for none. Read only when abi_version
   * is 3 or more. */
  uint32_t capabilities;
} InferdBackendApi;

/* The one exported symbol of a backend library. Returns the backend's table,
 * which must stay valid and unchanged while the library is loaded (a static
 * const table is the usual way); NULL if the backend cannot serve a server
 * of `host_abi_version`. Called once per load, before initialize. */
INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t host_abi_version);

typedef const InferdBackendApi* (*InferdBackendEntryFn)(uint32_t host_abi_version);

#define INFERD_BACKEND_ENTRY_SYMBOL "inferd_backend_entry"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* INFERD_BACKEND_H_ */
