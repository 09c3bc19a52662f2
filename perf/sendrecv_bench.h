// hoop-perf sendrecv: point-to-point between ranks 0 and 1 as the OSU benchmarks measure it
// (harness.h says how: osu_latency's ping-pong, osu_bw's window), over a size sweep. The other
// ranks of the job take part only in the barriers. Each size is R repetitions, the median
// reported with the spread; the last message of every size is checked byte by byte.
#pragma once

namespace hoop::perf {

int RunSendRecvBench(int argc, char** argv);

}  // namespace hoop::perf
