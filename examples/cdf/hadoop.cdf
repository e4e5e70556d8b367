# Hadoop: flow sizes of a Facebook Hadoop cluster, from Roy et al., "Inside the Social
# Network's (Datacenter) Network", SIGCOMM 2015, as the HPCC ns-3 model ships it
# (alibaba-edu/High-Precision-Congestion-Control, traffic_gen/FbHdp_distribution.txt)
# and the HPCC paper (SIGCOMM 2019) uses it. Mean 120 420.75 bytes (linear between points).
# size_bytes cumulative_percent
0 0
100 1
200 2
300 5
350 15
400 20
500 30
600 40
700 50
1000 60
2000 67
7000 70
30000 72
50000 82
80000 87
120000 90
300000 95
1000000 97.5
2000000 99
10000000 100
