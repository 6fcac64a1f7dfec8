"""Fetch the corpus's files from public repositories, exactly as their authors ship them, at a pinned commit.

    python scripts/corpus/repos.py                      # every file, from GitHub (raw files at the commit)
    python scripts/corpus/repos.py --mirror DIR         # from local git mirrors DIR/<owner>+<name>/repo
    python scripts/corpus/repos.py --only NAME ...      # some of them

Files whose license allows it are committed (tests/corpus/<name>/model.*); those marked committed=False here
(large ones) are kept out of the repository (tests/corpus/.gitignore) and fetched by this script. Each file's
sha256 is checked against the manifest once recorded: the oracle beside it belongs to those bytes.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manifest  # noqa: E402

TFLM = ("tensorflow/tflite-micro", "90b983c2b3f1480642e040bbd2ddb37b998f3424", "Apache-2.0")
TINY = ("mlcommons/tiny", "1afd2c9820f795965a6134facd0b4dfae41ef23f", "Apache-2.0")
TINYENGINE = ("mit-han-lab/tinyengine", "47bb283ce9d7e33c6fea623b3792726046dc9cfa", "MIT")
ONNX2C = ("kraiskil/onnx2c", "ea045cc169e9338bc8fe5b54d5109d2f2828db44",
          "onnx2c license ('You may use and distribute this software freely', LICENSE.txt)")
# TFLite Micro's examples added in pull request #1341 (each file at the commit that last wrote it)
TFLM_PR1341 = {c[:7]: ("tensorflow/tflite-micro", c, "Apache-2.0") for c in (
    "466a4818226c2479413c89a18405f0c2226c8eaa", "7b77ef528c72bf253ff0d8037dec2b428abbb2e9",
    "6aee91db4aba5e6ead0e5eeefbce4b47d9ac3752")}
TINY_V13 = ("mlcommons/tiny_results_v1.3", "cd605ea0981306693c9e19765a15801c776988dc", "Apache-2.0")
TINY_V12 = ("mlcommons/tiny_results_v1.2", "cadb362343f559d459e7cdb8748685ba76b9eb23", "Apache-2.0")
TINY_V07 = ("mlcommons/tiny_results_v0.7", "64623f41b6721bdff6d0133a524c63a003123b3b", "Apache-2.0")
# small GitHub projects that ship a .tflite and state no license: fetched, never committed
NO_LICENSE = "none stated (the author's; not committed)"
PREDICTIVE = ("5AIPAVAN/TinyML-Predictive_Maintenance", "5048750ca0738cd4fcfa89f5564ec2c9fd337242", NO_LICENSE)
RPS = ("Avi-python/EmbeddedSystem_HW2", "53ee0d568ed3f5576bc3dcadaffd8f2f0b19c686", NO_LICENSE)
SILABS = ("SiliconLabs/mltk", "a071446ed509116a36afcdc4a7629e989253f262", "Zlib (Silicon Labs MLTK, LICENSE.md)")
TINY_V11 = ("mlcommons/tiny_results_v1.1", "c32ef94d19429ef1d318e9c7a60002a4bd70e11b", "Apache-2.0")
URBAN = ("Berkya97/EdgeAssistNoiseClassifier", "5caf29550113cd949ce7bb39767461ca9275a083", NO_LICENSE)
GAIT = ("TravisLeeTS/tinyml_gait_recognition", "8822611946b40ee968f2d3faa6a06cb5568e7254", NO_LICENSE)
MWW = ("esphome/micro-wake-word-models", "05b65922cc433c9df13e98e32a7fe520758c837e", "Apache-2.0")
PSOC = ("xucenying/tinyml-anomaly-psoc-c3m5", "9d02cb68622587f6cea8b43e4a656c44e25bfd8c", "Apache-2.0")
AMBIQ_HAR = ("AmbiqAI/Human-Activity-Recognition", "13953469e4b0d8f64b5a4d2b8e2070004e5d5da7", "Apache-2.0")
EFINIX = ("Efinix-Inc/tinyml", "e5bc129e17f7a457dff334aa3fd040ccb85dbe27", "MIT (Efinix-Inc/tinyml, LICENSE.txt)")
ARM_KWT = ("ARM-software/keyword-transformer", "237e4097afd4f6851e0b82f0a8d65c2dfe8eae30", "Apache-2.0")
# ST's STM32 model zoo at a 2023 snapshot (a fork; ST's own repository is too large to fetch whole): the model files
# state no license of their own (the zoo's LICENSE.md covers its scripts: SLA0044 / BSD-3-Clause), so not committed
ST_ZOO = ("bvenreply/stm32ai-modelzoo", "2d9c459456f171096d64623364f5ff3cdfeb97b3",
          "none stated for the model files (STMicroelectronics; the zoo's scripts SLA0044 / BSD-3-Clause); not committed")
ST_ZOO_2024 = ("MohamedElhadidy0019/stm32ai-modelzoo", "81bdd9a912b070be1176c05ae346873de66a3b62", ST_ZOO[2])
ST_TUTORIAL = (ST_ZOO[0], ST_ZOO[1], "Apache-2.0 (tutorials/notebooks/models/LICENSE.md)")
SILABS_APPS = ("SiliconLabs/machine_learning_applications", "6c1d1655f6869f94674619031b3f3cae36ce6b1b",
               "Zlib (Silicon Labs, LICENSE)")

# name, kind, (repository, commit, license), path in the repository, committed
FILES = [
    ("tflm_hello_world_int8", "regression", TFLM, "tensorflow/lite/micro/examples/hello_world/models/hello_world_int8.tflite", True),
    ("tflm_micro_speech", "kws", TFLM, "tensorflow/lite/micro/examples/micro_speech/models/micro_speech_quantized.tflite", True),
    ("tflm_person_detect", "classification", TFLM, "tensorflow/lite/micro/models/person_detect.tflite", True),
    ("tflm_keyword_scrambled_8bit", "kws", TFLM, "tensorflow/lite/micro/models/keyword_scrambled_8bit.tflite", True),
    ("tflm_mnist_lstm_int8", "sequence", TFLM, "tensorflow/lite/micro/examples/mnist_lstm/trained_lstm_int8.tflite", True),
    ("tflm_micro_speech_lstm", "sequence", TFLM, "third_party/xtensa/examples/micro_speech_lstm/micro_speech_lstm.tflite", True),
    ("tflm_dtln_noise_suppression", "sequence", TFLM, "tensorflow/lite/micro/examples/dtln/dtln_noise_suppression.tflite", True),
    ("tflm_mobilenet_v2_from_pytorch", "classification", TFLM,
     "third_party/xtensa/examples/pytorch_to_tflite/mobilenet_v2_quantized_1x3x224x224.tflite", False),
    ("tiny_kws_ds_cnn", "kws", TINY, "benchmark/training/keyword_spotting/trained_models/kws_ref_model.tflite", True),
    ("tiny_streaming_wakeword", "kws", TINY, "benchmark/training/streaming_wakeword/trained_models/str_ww_ref_model.tflite", True),
    ("tiny_vww_mobilenet", "classification", TINY, "benchmark/training/visual_wake_words/trained_models/vww_96_int8.tflite", True),
    ("tiny_ic_resnet8", "classification", TINY, "benchmark/training/image_classification/trained_models/pretrainedResnet_quant.tflite", True),
    ("tiny_ic_resnet_large", "classification", TINY, "benchmark/training/image_classification/trained_models/pretrainedResnet_large_int8.tflite", True),
    ("tiny_ad_autoencoder", "anomaly", TINY, "benchmark/training/anomaly_detection/trained_models/ad01_int8.tflite", True),
    ("tiny_ad_toycar_micro", "anomaly", TINY,
     "benchmark/training/anomaly_detection/trained_models/ToyCar/baseline_tf23/model/model_ToyCar_quant_fullint_micro.tflite", True),
    ("tinyengine_mcunet_detection", "detection", TINYENGINE, "assets/detection.tflite", True),
    ("tinyengine_mcunetv2_large", "classification", TINYENGINE, "assets/mcunetv2_large.tflite", True),
    ("tinyengine_mcunet_vww", "classification", TINYENGINE, "assets/vww.tflite", True),
    ("tinyengine_mnist_lenet", "classification", TINYENGINE, "experimental/mnist_demo/assets/ptq_mnist_lenet-300-100.tflite", True),
    ("tflm_retinaface", "detection", TFLM_PR1341["466a481"], "tensorflow/lite/micro/examples/retinaface/retinaface.tflite", True),
    ("tflm_custom_rf_keras", "detection", TFLM_PR1341["7b77ef5"],
     "tensorflow/lite/micro/examples/custom_model_rf_keras/custom_model_rf_keras.tflite", True),
    ("tflm_id_model", "classification", TFLM_PR1341["6aee91d"], "tensorflow/lite/micro/examples/id_model/id_model.tflite", False),
    ("tiny13_kj_ad_autoencoder", "anomaly", TINY_V13, "closed/kai_jiang/code/ad/K1_BOARD_V1.0/models/deep_autoencoder.onnx", True),
    ("tiny13_kj_kws_ds_cnn", "kws", TINY_V13, "closed/kai_jiang/code/kws/K1_BOARD_V1.0/models/kws_ref_model.onnx", True),
    ("onnx2c_mnist", "classification", ONNX2C, "test/mnist/model.onnx", True),
    ("onnx2c_atmega_mnist", "classification", ONNX2C, "examples/atmega_mnist/mnist.simplified.onnx", True),
    # Silicon Labs' MLTK: the .tflite its example apps ship, and the quantized file inside a model archive
    # ("ARCHIVE!MEMBER": the member of the zip file at the commit)
    ("silabs_kws_on_off_v3", "kws", SILABS, "cpp/shared/apps/audio_classifier/config/tflite/keyword_spotting_on_off_v3.tflite", True),
    ("silabs_rock_paper_scissors", "classification", SILABS, "cpp/shared/apps/image_classifier/config/tflite/rock_paper_scissors.tflite", True),
    ("silabs_fingerprint_signature", "classification", SILABS,
     "cpp/shared/apps/fingerprint_authenticator/config/tflite/fingerprint_signature_generator.tflite", True),
    ("silabs_anomaly_detection", "anomaly", SILABS, "mltk/utils/test_helper/data/anomaly_detection.tflite", True),
    ("silabs_magic_wand", "har", SILABS,
     "mltk/models/tflite_micro/tflite_micro_magic_wand.mltk.zip!tflite_micro_magic_wand.tflite", True),
    ("silabs_kws_mobilenetv2", "kws", SILABS,
     "mltk/models/siliconlabs/keyword_spotting_mobilenetv2.mltk.zip!keyword_spotting_mobilenetv2.tflite", True),
    ("silabs_audio_example1", "audio-events", SILABS, "mltk/models/examples/audio_example1.mltk.zip!audio_example1.tflite", True),
    ("silabs_autoencoder_example", "anomaly", SILABS,
     "mltk/models/examples/autoencoder_example.mltk.zip!autoencoder_example.tflite", True),
    # MLPerf Tiny v0.7 open division, Alibaba's (Sinian) ONNX models; a PyTorch export (ad, ic, vww) and a tf2onnx one (kws)
    ("tiny07_alibaba_kws", "kws", TINY_V07, "open/Alibaba/code/kws/sinian/kws_model/model_kws.onnx", True),
    ("tiny07_alibaba_ad", "anomaly", TINY_V07, "open/Alibaba/code/ad/sinian/ad_model/model_ad.onnx", True),
    ("tiny07_alibaba_vww", "classification", TINY_V07, "open/Alibaba/code/vww/sinian/vww_model/model_vww.onnx", True),
    ("tiny07_alibaba_ic", "classification", TINY_V07, "open/Alibaba/code/ic/sinian/ic_model/model_ic.onnx", True),
    # MLPerf Tiny v1.3, Kai Jiang's QDQ ONNX models (quantized by the submitter; the float ones are above)
    ("tiny13_kj_ic_resnet_qdq", "classification", TINY_V13, "closed/kai_jiang/code/ic/K1_BOARD_V1.0/models/resnet.onnx", True),
    ("tiny13_kj_vww_mobilenet_v1_qdq", "classification", TINY_V13,
     "closed/kai_jiang/code/vww/K1_BOARD_614.4MHz_V1.0/models/mobilenet_v1.onnx", True),
    # float .tflite files (TFLiteConverter without a representative dataset): edgec quantizes them from calib.npz
    ("tflm_hello_world_float", "regression", TFLM, "tensorflow/lite/micro/examples/hello_world/models/hello_world_float.tflite", True),
    ("tiny12_qualcomm_kws_float", "kws", TINY_V12, "closed/Qualcomm/models/kws_saved_model.tflite", True),
    ("gh_predictive_maintenance_mlp", "anomaly", PREDICTIVE, "model_full_integer_quant.tflite", False),
    ("gh_rock_paper_scissors_mnv2", "classification", RPS, "model.tflite", False),
    # the hidden-corpus round (issue 29): files nobody here had run, as a new user brings them
    ("silabs_kws_pacman_v3", "kws", SILABS, "cpp/shared/apps/ble_audio_classifier/config/tflite/keyword_spotting_pacman_v3.tflite", True),
    ("silabs_kws_heygecko", "kws", SILABS,
     "mltk/models/siliconlabs/keyword_spotting_heygecko.mltk.zip!keyword_spotting_heygecko.tflite", True),
    ("silabs_image_example1", "classification", SILABS, "mltk/utils/test_helper/data/image_example1.tflite", True),
    ("tiny11_kj_vww_tflite2onnx", "classification", TINY_V11,
     "closed/kai_jiang/code/vww/graph_quantization/models/vww_96_float.onnx", False),
    ("gh_urbansound_noise_cnn", "audio-events", URBAN, "model.tflite", False),
    # the fifth round: a gait / activity CNN an Arduino project deploys (full-integer PTQ, 6-axis IMU window)
    ("gh_gait_har_cnn", "har", GAIT,
     "outputs/deployment/m3_retrained_with_v2_1/selected_candidate/m3_v2_1_mixed_6ch_int8.tflite", False),
    # the sixth round: ESPHome's microWakeWord streaming models (resource variables as ring buffers, a uint8
    # probability out) and a bearing-fault MLP a Cortex-M33 project deploys with TFLite Micro + CMSIS-NN
    ("mww_okay_nabu_v2", "kws", MWW, "models/v2/okay_nabu.tflite", True),
    ("mww_hey_mycroft_v2", "kws", MWW, "models/v2/hey_mycroft.tflite", True),
    ("mww_vad_v2", "audio-events", MWW, "models/v2/vad.tflite", True),
    ("mww_alexa_v1", "kws", MWW, "models/alexa.tflite", True),
    ("gh_bearing_fault_mlp", "anomaly", PSOC, "ml/model_int8.tflite", True),
    ("ambiq_har_cnn", "har", AMBIQ_HAR, "python/trained_models/model.tflite", True),
    # the ninth round: the int8 models Efinix's TinyML generator ships for its RISC-V SoC (BlazeFace-style face
    # detector, face landmarks, a YOLO-style person detector), and Arm's trained Keyword Transformer (KWT-1), a
    # float .tflite with its speech front-end (framing, a DFT as matrix products, log-mel, DCT) in the graph
    ("efx_mediapipe_face_detection", "detection", EFINIX, "tools/tinyml_generator/model/mediapipe_face_detection.tflite", True),
    ("efx_mediapipe_face_landmark", "detection", EFINIX, "tools/tinyml_generator/model/mediapipe_face_landmark.tflite", False),
    ("efx_yolo_person_detect", "detection", EFINIX, "tools/tinyml_generator/model/yolo_person_detect.tflite", True),
    ("arm_kwt1_float", "transformer", ARM_KWT, "models_data_v2_12_labels/kwt1/tflite_non_stream/non_stream.tflite", False),
    # the tenth round: TFLite Micro's other keyword model (int16 input into a QUANTIZE, the SVDF stack in int8, an
    # int32 output: its 16-bit audio-feature variant) and the float file of its MNIST LSTM example (a Keras LSTM
    # through TFLiteConverter: UNIDIRECTIONAL_SEQUENCE_LSTM with the converter's cell clip of 10)
    ("tflm_keyword_scrambled", "kws", TFLM, "tensorflow/lite/micro/models/keyword_scrambled.tflite", True),
    ("tflm_mnist_lstm_float", "sequence", TFLM, "tensorflow/lite/micro/examples/mnist_lstm/trained_lstm.tflite", True),
    # the twelfth round: ST's STM32 model zoo as it ships its trained files (float32 input into a QUANTIZE for the
    # IMU models, uint8 pixels for the images, int8 spectrograms for the audio ones, a float32 SOFTMAX tail; the
    # SSD's three float outputs with TILE, RESIZE_BILINEAR and a SHAPE subgraph), and two Silicon Labs applications
    ("st_har_gmp_wl_24", "har", ST_ZOO,
     "human_activity_recognition/models/gmp/ST_pretrainedmodel_public_dataset/WISDM/gmp_wl_24/gmp_wl_24_int8.tflite", False),
    ("st_har_ign_wl_48", "har", ST_ZOO,
     "human_activity_recognition/models/ign/ST_pretrainedmodel_public_dataset/WISDM/ign_wl_48/ign_wl_48_int8.tflite", False),
    ("st_aed_miniresnetv2_1stacks", "audio-events", ST_ZOO, "audio_event_detection/models/miniresnetv2/"
     "ST_pretrainedmodel_public_dataset/esc10/miniresnetv2_1stacks_64x50/miniresnetv2_1stacks_64x50_int8.tflite", False),
    ("st_aed_yamnet_256", "audio-events", ST_ZOO, "audio_event_detection/models/yamnet/"
     "ST_pretrainedmodel_public_dataset/esc_10/yamnet_256_64x96/yamnet_256_64x96_int8.tflite", False),
    ("st_ic_resnet_v1_8_32", "classification", ST_ZOO, "image_classification/models/resnetv1/"
     "ST_pretrainedmodel_public_dataset/cifar10/resnet_v1_8_32/resnet_v1_8_32_int8.tflite", False),
    ("st_ic_stmnist_v1", "classification", ST_ZOO, "image_classification/models/stmnist/"
     "ST_pretrainedmodel_public_dataset/emnist_byclass/stmnist_v1/stmnist_v1_int8.tflite", False),
    ("st_ic_fdmobilenet_025_128", "classification", ST_ZOO, "image_classification/models/fdmobilenet/"
     "ST_pretrainedmodel_public_dataset/flowers/fdmobilenet_0.25_128/fdmobilenet_0.25_128_int8.tflite", False),
    ("st_od_ssd_mobilenet_v1_025_192", "detection", ST_ZOO, "object_detection/models/ssd_mobilenetv1/"
     "ST_pretrainedmodel_public_dataset/COCO/ssd_mobilenet_v1_0.25_192/ssd_mobilenet_v1_025_192_int8.tflite", False),
    ("st_har_svc_wl_24", "har", ST_ZOO, "human_activity_recognition/models/svc/"
     "ST_pretrainedmodel_public_dataset/WISDM/svc_wl_24_pct_5/svc_wl_24_pct_5.onnx", False),
    ("st_od_yolo_lc_v1_192", "detection", ST_ZOO_2024, "object_detection/pretrained_models/st_yolo_lc_v1/"
     "ST_pretrainedmodel_public_dataset/coco_2017_person/st_yolo_lc_v1_192/st_yolo_lc_v1_192_int8.tflite", False),
    ("st_tutorial_mobilenet_v2_128_onnx", "classification", ST_TUTORIAL,
     "tutorials/notebooks/models/mobilenet_v2_128_0.5.onnx", False),
    ("silabs_people_flow_counter", "detection", SILABS_APPS,
     "application/vision/people_flow_counter_mlx90640/config/tflite/model_quantized.tflite", True),
    ("silabs_ble_magic_wand", "har", SILABS_APPS, "application/imu/ble_magic_wand/config/tflite/model_quantized.tflite", True),
]


# a shipped .onnx fed other than values in [0, 1]: the range oracles.py draws its inputs from
INPUT_RANGES = {"tiny13_kj_ic_resnet_qdq": [0, 255],     # raw pixels: its input QuantizeLinear has scale 1
                "tflm_hello_world_float": [0, 6.283],    # the sine model: x in [0, 2 pi]
                "arm_kwt1_float": [-0.5, 0.5]}           # KWT-1: 16,000 audio samples (speech level)


def read(repo: str, commit: str, path: str, mirror: Path | None) -> bytes:
    if "!" in path:                     # a member of a zip archive in the repository
        import io
        import zipfile
        archive, member = path.split("!", 1)
        return zipfile.ZipFile(io.BytesIO(read(repo, commit, archive, mirror))).read(member)
    if mirror is not None:
        git_dir = mirror / repo.replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():      # a mirror with a work tree
            git_dir = git_dir / ".git"
        return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True,
                              capture_output=True).stdout
    with urllib.request.urlopen(f"https://raw.githubusercontent.com/{repo}/{commit}/{path}", timeout=120) as r:
        return r.read()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, help="folder of git mirrors <owner>+<name>/repo")
    ap.add_argument("--only", nargs="*", help="names to fetch")
    ap.add_argument("--missing", action="store_true", help="only the files not on disk (the uncommitted ones)")
    args = ap.parse_args(argv)
    known = manifest.load()
    for name, kind, (repo, commit, lic), path, committed in FILES:
        if args.only and name not in args.only:
            continue
        out = manifest.CORPUS / name / ("model" + Path(path.split("!")[-1]).suffix)
        if args.missing and out.is_file():
            continue
        data = read(repo, commit, path, args.mirror)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        if name in known and known[name]["sha256"] != manifest.sha256(out):
            print(f"{name}: sha256 differs from the manifest's (the oracle was computed on other bytes)")
            return 1
        manifest.record(name, kind, out, {"repository": f"https://github.com/{repo}", "commit": commit,
                                          "path": path}, lic, committed,
                        f"python scripts/corpus/repos.py --only {name}",
                        **({"input_range": INPUT_RANGES[name]} if name in INPUT_RANGES else {}))
        print(f"{name}: {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
