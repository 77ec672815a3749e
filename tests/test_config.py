import pytest
from pydantic import ValidationError

from benchlib.inputs.config import describe_validation_error
from benchlib.kinds.classification.config import ClassificationConfig, classification_models


def test_defaults_and_resolved_image_size():
    config = ClassificationConfig()
    assert (config.model, config.batch_size, config.precision) == ("resnet50", 32, "fp32")
    assert config.resolved_image_size == 224
    assert ClassificationConfig(model="inception_v3").resolved_image_size == 299
    assert ClassificationConfig(model="inception_v3", benchmark="inference",
                                image_size=96).resolved_image_size == 96


def test_known_models_come_from_torchvision():
    models = classification_models()
    assert {"resnet50", "resnet18", "inception_v3", "vit_b_16"} <= set(models)
    assert "fasterrcnn_resnet50_fpn" not in models  # detection, not classification


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("model", "resnet5O", "unknown model 'resnet5O'; allowed: any torchvision classification"),
    ("batch_size", 0, "greater than 0"),
    ("precision", "fp8", "'fp32', 'tf32', 'amp_fp16' or 'amp_bf16'"),
    ("iterations", "many", "epoch"),
    ("device", "tpu", "'auto', 'cuda' or 'cpu'"),
    ("compile", "fast", "'none', 'default', 'reduce-overhead' or 'max-autotune'"),
    ("bogus", 1, "unknown parameter"),
])
def test_bad_values_name_field_value_and_what_is_allowed(field, value, expected):
    with pytest.raises(ValidationError) as info:
        ClassificationConfig(**{field: value})
    lines = describe_validation_error(info.value)
    assert any(line.startswith(f"{field}") and expected in line for line in lines), lines
    if field != "bogus":
        assert any(repr(value) in line for line in lines), lines


def test_real_data_needs_an_existing_folder(tmp_path):
    with pytest.raises(ValidationError, match="data_dir is empty"):
        ClassificationConfig(dataset="real")
    with pytest.raises(ValidationError, match="is not a directory"):
        ClassificationConfig(dataset="real", data_dir=str(tmp_path / "missing"))
    assert ClassificationConfig(dataset="real", data_dir=str(tmp_path)).data_dir == str(tmp_path)


def test_image_size_limits():
    with pytest.raises(ValidationError, match="64 too small: inception_v3 inference needs image_size >= 75"):
        ClassificationConfig(model="inception_v3", benchmark="inference", image_size=64)
    with pytest.raises(ValidationError, match="128 too small: inception_v3 train needs image_size >= 299"):
        ClassificationConfig(model="inception_v3", benchmark="train", image_size=128)
    with pytest.raises(ValidationError, match="below 32"):
        ClassificationConfig(image_size=16)


def test_the_model_names_come_from_torchvision_source_without_importing_it():
    import subprocess
    import sys

    import torchvision

    from benchlib.kinds.classification.config import classification_models

    assert classification_models() == tuple(sorted(
        torchvision.models.list_models(module=torchvision.models)))
    code = ("import sys; from benchlib.kinds.classification.config import classification_models; "
            "names = classification_models(); assert 'resnet50' in names, names; "
            "print('torchvision' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
