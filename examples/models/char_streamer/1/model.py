"""char_streamer: a decoupled model that streams its prompt back one
character (UTF-8 code point) per response, then sends the final flag alone.

Each request is answered on its own thread, so one instance streams several
prompts at once; a cancelled request stops early (still with a final flag)."""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                "char_streamer must be decoupled (model_transaction_policy { decoupled: true })")
        delay = config.get("parameters", {}).get("delay_ms", {}).get("string_value", "0")
        self.default_delay_ms = float(delay or 0)
        self.lock = threading.Lock()
        self.threads = set()

    def execute(self, requests):
        for request in requests:
            prompt = pb_utils.get_input_tensor_by_name(request, "PROMPT").as_numpy().reshape(-1)
            text = prompt[0] if len(prompt) else b""
            if isinstance(text, bytes):
                text = text.decode("utf-8", errors="replace")
            params = json.loads(request.parameters() or "{}")
            delay_ms = float(params.get("delay_ms", self.default_delay_ms))
            sender = request.get_response_sender()
            t = threading.Thread(target=self._stream, args=(sender, str(text), delay_ms),
                                 daemon=True)
            with self.lock:
                self.threads.add(t)
            t.start()
        return None

    def _stream(self, sender, text, delay_ms):
        try:
            for i, ch in enumerate(text):
                if sender.is_cancelled():
                    break
                if delay_ms > 0:
                    time.sleep(delay_ms / 1000.0)
                out = [pb_utils.Tensor("TEXT", np.array([ch.encode("utf-8")], dtype=np.object_)),
                       pb_utils.Tensor("INDEX", np.array([i], dtype=np.uint32))]
                sender.send(pb_utils.InferenceResponse(output_tensors=out))
        finally:
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            with self.lock:
                self.threads.discard(threading.current_thread())

    def finalize(self):
        with self.lock:
            pending = list(self.threads)
        for t in pending:
            t.join(timeout=5)
