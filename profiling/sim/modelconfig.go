package sim

import _ "embed"

// ModelConfig is the config.json of the model whose kernels the simulated
// engine serves (MiniMax-M2.5: its kernel tables are ATOM's on MI355X), so
// that a run on it describes the architecture as a local model directory
// would, without --config.
//
//go:embed model_config.json
var ModelConfig []byte
