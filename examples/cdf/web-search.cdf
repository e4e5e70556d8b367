# Web search: flow sizes of a production web-search cluster, from Alizadeh et al., "Data
# Center TCP (DCTCP)", SIGCOMM 2010 (figure 4), as the HPCC ns-3 model ships it
# (alibaba-edu/High-Precision-Congestion-Control, traffic_gen/WebSearch_distribution.txt)
# and the HPCC paper (SIGCOMM 2019) uses it. Mean 1 711 250 bytes (linear between points).
# size_bytes cumulative_percent
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
