module libbroadcast/broadcast

go 1.19
