"""YAML with line numbers: `loader.load_yaml` returns YamlMap/YamlList values that know where they came from."""
