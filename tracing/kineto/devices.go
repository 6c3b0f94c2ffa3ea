package kineto

// MI355X returns the properties an AMD Instinct MI355X reports (gfx950, 256
// CUs, 288 GB): the GPU the built-in kernel model describes, written into
// the header of generated traces.
func MI355X(id int) DeviceProperties {
	return DeviceProperties{
		ID: id, Name: "AMD Instinct MI355X", TotalGlobalMem: 309220868096,
		ComputeMajor: 9, ComputeMinor: 5,
		MaxThreadsPerBlock: 1024, MaxThreadsPerMultiprocessor: 2048,
		RegsPerBlock: 131072, WarpSize: 64, SharedMemPerBlock: 65536,
		NumSms: 256, MaxSharedMemoryPerMultiProcessor: 163840,
	}
}
