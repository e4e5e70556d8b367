# Storage: flow sizes of an Alibaba storage cluster (2019), as the HPCC ns-3 model ships
# them (alibaba-edu/High-Precision-Congestion-Control, traffic_gen/AliStorage2019.txt):
# mostly 4-16 KB blocks with a tail to 2 MB. Mean 40 869.8 bytes (linear between points).
# size_bytes cumulative_percent
0 0
4000 22.93
8000 69.21
16000 80.61
32000 90.47
64000 93.53
128000 96.77
256000 97.53
2000000 100
