#!/usr/bin/python3
"""The image pre-processing backend (backends/image, OpenCV) and the
digits_pipeline ensemble (digits_preprocess -> digits) end to end over HTTP:
pixel values through each option, the held-out digits rendered as PNG and
JPEG classified through the pipeline, and bad images or configs rejected with
messages that name the problem."""

import os
import shutil
import struct
import unittest

from harness import ServerTestCase, model_config, parse_infer_response, write_model
import pipeline_util as pu

SKIP = pu.examples_missing()


def image_config(name, out_dims, params, max_batch_size=8):
    extra = "".join('parameters { key: "%s" value { string_value: "%s" } }\n' % kv
                    for kv in params.items())
    return model_config(name, "image", [("IMAGE", "TYPE_STRING", (1,))],
                        [("PIXELS", "TYPE_FP32", out_dims)], max_batch_size, extra)


# A 2x2 RGB image: red, green / blue, white.
RGB_2X2 = pu.png([[255, 0, 0, 0, 255, 0], [0, 0, 255, 255, 255, 255]], 3)


@unittest.skipIf(SKIP, SKIP)
class ImageBackendTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        os.makedirs(repo)
        pu.copy_digits_pipeline(repo)
        write_model(repo, "rgb_chw", image_config("rgb_chw", (3, 2, 2), {"color": "rgb"}))
        write_model(repo, "bgr_hwc", image_config("bgr_hwc", (2, 2, 3), {
            "color": "bgr", "layout": "HWC", "scale": "0.00392156862745098",
            "mean": "0.5,0.25,0", "std": "0.5"}))
        write_model(repo, "gray_4x4", image_config("gray_4x4", (1, 4, 4), {
            "color": "gray", "interpolation": "nearest"}))
        write_model(repo, "bad_channels", image_config("bad_channels", (3, 8, 8),
                                                       {"color": "gray"}))
        write_model(repo, "bad_std", image_config("bad_std", (3, 8, 8), {"std": "1,2"}))
        return [repo]

    def infer(self, model, images, outputs=None):
        blobs = [b"".join(pu.bytes_element(i) for i in images)]
        req = {"inputs": [{"name": "IMAGE", "shape": [len(images), 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blobs[0])}}]}
        if outputs:
            req["outputs"] = outputs
        return self.client.infer(model, req, blobs=blobs)

    def pixels(self, model, image):
        r = self.infer(model, [image])
        self.assertOk(r)
        return r.json()["outputs"][0]

    def test_rgb_chw_keeps_raw_values(self):
        out = self.pixels("rgb_chw", RGB_2X2)
        self.assertEqual(out["shape"], [1, 3, 2, 2])
        # planes R, G, B; pixels red, green, blue, white
        self.assertEqual(out["data"], [255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255])

    def test_bgr_hwc_scales_and_normalises(self):
        out = self.pixels("bgr_hwc", RGB_2X2)
        self.assertEqual(out["shape"], [1, 2, 2, 3])
        mean, std = (0.5, 0.25, 0.0), 0.5
        bgr = [(0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 1, 1)]
        want = [(v - mean[c]) / std for px in bgr for c, v in enumerate(px)]
        for got, w in zip(out["data"], want):
            self.assertAlmostEqual(got, w, places=4)

    def test_gray_resize(self):
        out = self.pixels("gray_4x4", pu.png([[200] * 8] * 8, 1))
        self.assertEqual(out["shape"], [1, 1, 4, 4])
        self.assertEqual(out["data"], [200.0] * 16)

    def test_digits_pipeline_classifies_held_out_pngs(self):
        images = pu.digit_images(".png")
        self.assertGreater(len(images), 400)
        correct = 0
        for start in range(0, len(images), 32):  # batches of up to 32 images per request
            chunk = images[start:start + 32]
            blobs = [b"".join(pu.bytes_element(i) for i, _ in chunk)]
            req = {"inputs": [{"name": "IMAGE", "shape": [len(chunk), 1], "datatype": "BYTES",
                               "parameters": {"binary_data_size": len(blobs[0])}}],
                   "outputs": [{"name": "PROBABILITIES", "parameters": {"binary_data": True}}]}
            r = self.client.infer("digits_pipeline", req, blobs=blobs)
            self.assertOk(r)
            _, outs = parse_infer_response(r)
            probs = struct.unpack("<%df" % (10 * len(chunk)), outs["PROBABILITIES"])
            for k, (_, label) in enumerate(chunk):
                row = probs[10 * k:10 * k + 10]
                correct += int(max(range(10), key=row.__getitem__) == label)
        accuracy = correct / len(images)
        self.assertGreaterEqual(accuracy, 0.95, "accuracy %.3f" % accuracy)

    def test_digits_pipeline_takes_jpeg(self):
        images = pu.digit_images(".jpg")
        self.assertTrue(images)
        correct = 0
        for data, label in images:
            probs = self.pixels("digits_pipeline", data)["data"]
            correct += int(max(range(10), key=probs.__getitem__) == label)
        self.assertGreaterEqual(correct, len(images) - 1)

    def test_not_an_image_is_400(self):
        r = self.infer("digits_pipeline", [b"hello, world"])
        self.assertError(r, 400, "digits_preprocess", "not a JPEG or PNG image")
        self.assertServerAlive()

    def test_truncated_png_is_400(self):
        data = pu.digit_images(".png")[0][0]
        r = self.infer("gray_4x4", [data[:40]])
        self.assertError(r, 400, "cannot decode PNG image")

    def test_empty_image_is_400(self):
        self.assertError(self.infer("rgb_chw", [b""]), 400, "empty image")

    def test_bad_element_of_a_batch_is_named(self):
        good = pu.digit_images(".png")[0][0]
        r = self.infer("gray_4x4", [good, b"\xff\xd8\xffjunk"])
        self.assertError(r, 400, "element 1", "JPEG")
        self.assertOk(self.infer("gray_4x4", [good, good]))

    def test_bad_configs_are_unavailable_with_reason(self):
        index = {e["name"]: e for e in self.client.post_json("/v2/repository/index", {}).json()}
        self.assertEqual(index["bad_channels"]["state"], "UNAVAILABLE")
        self.assertIn("channels", index["bad_channels"]["reason"])
        self.assertEqual(index["bad_std"]["state"], "UNAVAILABLE")
        self.assertIn("'std' has 2 values", index["bad_std"]["reason"])


RESNET_SKIP = SKIP or (None if os.path.exists(os.path.join(pu.EXAMPLES, "resnet50", "1", "model.pt"))
                       else "examples/models/resnet50/1/model.pt missing (run make models)")


@unittest.skipIf(RESNET_SKIP, RESNET_SKIP)
class Resnet50PipelineTest(ServerTestCase):
    """resnet50_pipeline as make models builds it: JPEG -> 224x224 normalised -> resnet50."""

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        os.makedirs(repo)
        for m in ("resnet50", "resnet50_preprocess", "resnet50_pipeline"):
            shutil.copytree(os.path.join(pu.EXAMPLES, m), os.path.join(repo, m))
        return [repo]

    def test_jpeg_gives_1000_logits(self):
        jpeg = pu.digit_images(".jpg")[0][0]
        blob = pu.bytes_element(jpeg)
        req = {"inputs": [{"name": "IMAGE", "shape": [1, 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}]}
        r = self.client.infer("resnet50_pipeline", req, blobs=[blob])
        self.assertOk(r)
        out = r.json()["outputs"][0]
        self.assertEqual((out["name"], out["shape"]), ("LOGITS", [1, 1000]))
        self.assertTrue(all(abs(v) < 1e6 for v in out["data"]))
        self.assertEqual(len(set(out["data"])) > 1, True)

    def test_preprocessing_normalises_like_torchvision(self):
        blob = pu.bytes_element(pu.png([[255, 128, 0] * 224] * 224, 3))
        req = {"inputs": [{"name": "image_bytes", "shape": [1, 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": "input", "parameters": {"binary_data": True}}]}
        r = self.client.infer("resnet50_preprocess", req, blobs=[blob])
        self.assertOk(r)
        _, outs = parse_infer_response(r)
        px = struct.unpack("<%df" % (3 * 224 * 224), outs["input"])
        for c, (v, mean, std) in enumerate(zip((255, 128, 0), (0.485, 0.456, 0.406),
                                               (0.229, 0.224, 0.225))):
            self.assertAlmostEqual(px[c * 224 * 224 + 1000], (v / 255.0 - mean) / std, places=4)


if __name__ == "__main__":
    unittest.main()
